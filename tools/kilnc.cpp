//===- kilnc.cpp - the Kiln compiler driver -------------------------------===//
//
//   kilnc --list
//   kilnc --kernel softmax --config BLOCK=2048 --emit tile
//   kilnc kernel.mlir --emit ptx
//
// Traces a registered kernel (or reads IR from a file), runs the pipeline up
// to the stage named by --emit, and prints it. Uses only Kiln's public API.
//
//===----------------------------------------------------------------------===//

#include <kiln/compiler.h>
#include <kiln/kiln.h>
#include <kiln/version.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string_view>

namespace {

const char *usage = R"(kilnc: the Kiln compiler driver

usage: kilnc [options] [input.mlir]

  --list                 list the registered kernels, their signatures and default configs
  --kernel NAME          trace the registered kernel NAME (instead of reading input.mlir)
  --config K=V[,K=V]     config entries the kernel reads, merged over its defaults (repeatable)
  --spec CHARS           argument specialization, one character per parameter:
                         'd' divisible by 16 (pointers: 16-byte aligned), '8' by 8 only, '1' equal to 1,
                         '.' nothing more (integers: positive); an integer of zero or less: 'z'
                         divisible by 16, 'y' by 8 only, 'n' neither
  --emit STAGE           traced, tile, gpu, llvm, llvm-ir, then for NVIDIA ptx or cubin-info, for AMD
                         amdgcn or code-object-info (default: tile)
  --arch ARCH            GPU target: NVIDIA sm_75 or newer (sm_80, sm_90a, sm_100, ...; default sm_90a),
                         or AMD gfx90a, gfx942, gfx1100
  --locations            print source locations of operations
  -o FILE                write to FILE instead of stdout
  --version              Kiln's version
  --help                 this text
)";

struct Options {
  bool list = false, locations = false;
  std::string kernel, spec, emit = "tile", arch = "sm_90a", output = "-", input;
  kiln::Config config; ///< the --config entries alone (the kernel's defaults go under them)
};

/// Flushes stdout; what printf and fwrite could not write shows only here.
void finishStdout() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    throw kiln::Error(std::string("cannot write the output: ") + std::strerror(errno));
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      size_t eq = arg.find('=');
      if (arg.rfind("--", 0) == 0 && eq != std::string::npos && arg.substr(0, eq) != "--config")
        return arg.substr(eq + 1);
      if (i + 1 >= argc)
        throw kiln::Error("option " + arg + " needs a value");
      return argv[++i];
    };
    std::string name = arg.substr(0, arg.find('='));
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage, stdout);
      finishStdout();
      std::exit(0);
    } else if (arg == "--version") {
      std::printf("kilnc (Kiln %s)\n", kiln::version());
      finishStdout();
      std::exit(0);
    } else if (arg == "--list") {
      o.list = true;
    } else if (arg == "--locations") {
      o.locations = true;
    } else if (name == "--kernel") {
      o.kernel = value();
    } else if (name == "--spec") {
      o.spec = value();
    } else if (name == "--emit") {
      o.emit = value();
    } else if (name == "--arch") {
      o.arch = value();
    } else if (arg == "-o") {
      o.output = value();
    } else if (arg == "--config") {
      o.config = o.config.merged(kiln::Config::parse(value()));
    } else if (arg.rfind("--config=", 0) == 0) {
      o.config = o.config.merged(kiln::Config::parse(arg.substr(9)));
    } else if (!arg.empty() && arg[0] == '-' && arg != "-") {
      throw kiln::Error("unknown option " + arg + " (see --help)");
    } else {
      o.input = arg;
    }
  }
  return o;
}

std::string signatureText(const kiln::Kernel &kernel) {
  std::string text;
  for (const kiln::ElementType &type : kernel.signature())
    text += (text.empty() ? "" : ", ") + kiln::to_string(type);
  return "(" + text + ")";
}

int listKernels() {
  for (const kiln::RegisteredKernel &entry : kiln::registered_kernels()) {
    std::printf("%-14s %s\n", entry.name.c_str(), signatureText(entry.kernel).c_str());
    std::printf("%-14s defaults: %s\n", "", entry.kernel.default_config().str().c_str());
    std::printf("%-14s %s\n", "", entry.description.c_str());
  }
  finishStdout();
  return 0;
}

kiln::Specialization parseSpecialization(const std::string &text, const kiln::Kernel &kernel) {
  kiln::Specialization spec;
  if (text.empty())
    return spec;
  if (text.size() != kernel.signature().size())
    throw kiln::Error("--spec has " + std::to_string(text.size()) + " characters; kernel '" + kernel.name() +
                      "' has " + std::to_string(kernel.signature().size()) + " parameters");
  for (char c : text) {
    if (std::string_view("d81.nzy").find(c) == std::string_view::npos)
      throw kiln::Error(std::string("--spec: unknown character '") + c + "' (use d, 8, 1, ., n, z or y)");
    spec.args.push_back({c == 'd' || c == 'z', c == '1', c == '8' || c == 'y', c == 'n' || c == 'z' || c == 'y'});
  }
  return spec;
}

/// A --config entry the kernel never looked up steers nothing: most often
/// a mistyped name, which would otherwise compile the defaults unnoticed.
void checkConfigKeysRead(const kiln::Config &given, const std::vector<std::string> &read,
                         const std::string &kernel) {
  std::string unread;
  for (const auto &[name, value] : given.values())
    if (!std::binary_search(read.begin(), read.end(), name))
      unread += (unread.empty() ? "'" : ", '") + name + "'";
  if (unread.empty())
    return;
  std::string known;
  for (const std::string &name : read)
    known += (known.empty() ? "" : ", ") + name;
  throw kiln::Error("--config: kernel '" + kernel + "' does not read " + unread + " (it reads " + known + ")");
}

std::string readInput(const std::string &path) {
  std::stringstream text;
  if (path.empty() || path == "-") {
    text << std::cin.rdbuf();
    if (std::cin.bad())
      throw kiln::Error("cannot read the standard input");
    return text.str();
  }
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw kiln::Error("cannot read " + path + ": it is a directory, not a file of IR");
  std::ifstream in(path);
  if (!in)
    throw kiln::Error("cannot read " + path + ": " + std::strerror(errno));
  text << in.rdbuf();
  if (in.bad())
    throw kiln::Error("cannot read " + path + ": " + std::strerror(errno));
  return text.str();
}

kiln::Module loadModule(Options &o) {
  if (!o.kernel.empty()) {
    const kiln::RegisteredKernel *entry = kiln::find_kernel(o.kernel);
    if (!entry) {
      std::string known;
      for (const auto &k : kiln::registered_kernels())
        known += (known.empty() ? "" : ", ") + k.name;
      throw kiln::Error("no kernel named '" + o.kernel + "' (registered: " + known + ")");
    }
    const kiln::Config given = o.config;
    o.config = entry->kernel.default_config().merged(given);
    std::vector<std::string> read;
    kiln::Module module = entry->kernel.trace(o.config, parseSpecialization(o.spec, entry->kernel), &read);
    checkConfigKeysRead(given, read, o.kernel);
    return module;
  }
  const std::string name = o.input.empty() || o.input == "-" ? "<stdin>" : o.input;
  kiln::Module module = kiln::Module::parse(readInput(o.input), name);
  if (module.kernel_name().empty())
    throw kiln::Error(name + " holds no tile.func: there is no kernel to compile");
  checkConfigKeysRead(o.config, kiln::Config::compiler_keys(), module.kernel_name()); // (IR reads no other)
  return module;
}

} // namespace

int main(int argc, char **argv) {
  try {
    Options o = parse(argc, argv);
    if (o.list)
      return listKernels();
    kiln::check_target(o.arch);
    auto stage = kiln::parse_stage(o.emit);
    if (!stage) {
      std::string names;
      for (auto n : kiln::stage_names())
        names += (names.empty() ? "" : ", ") + std::string(n);
      throw kiln::Error("unknown stage '" + o.emit + "' (stages: " + names + ")");
    }
    kiln::Module module = loadModule(o);
    kiln::CompileOptions options = kiln::compile_options(o.config, o.arch);
    options.locations = o.locations;
    std::string text = kiln::emit(module, *stage, options);
    if (o.output == "-") {
      std::fwrite(text.data(), 1, text.size(), stdout);
      finishStdout();
    } else {
      std::ofstream out(o.output);
      out << text;
      out.close(); // (what the buffer held is written, or fails, here)
      if (!out)
        throw kiln::Error("cannot write " + o.output + ": " + std::strerror(errno));
    }
    return 0;
  } catch (const kiln::Error &error) {
    std::fprintf(stderr, "kilnc: %s\n", error.what());
    return 1;
  }
}
