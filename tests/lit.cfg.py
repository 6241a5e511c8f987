# lit configuration for Kiln's compiler tests (FileCheck on IR and PTX).
import os
import lit.formats

config.name = "Kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_build_dir, "tests")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "CMakeLists.txt", "Inputs", "unit", "common"]

# Kiln's tools first, then LLVM's FileCheck/not/count.
config.environment["PATH"] = os.pathsep.join(
    [config.kiln_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# Keep test runs from reading or writing the user's kernel cache.
config.environment["KILN_CACHE_DIR"] = os.path.join(config.test_exec_root, "kiln-cache")

if config.ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))
# Where the tools are, for tests of the programs themselves (what they link).
config.substitutions.append(("%kiln_bin", config.kiln_tools_dir))
