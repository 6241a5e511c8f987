//===- kilnc.cpp - the Kiln compiler driver -------------------------------===//
//
//   kilnc --list
//   kilnc --kernel softmax --config BLOCK=2048 --emit tile
//   kilnc kernel.mlir --emit tile
//
// Traces a registered kernel (or reads IR from a file), runs the pipeline up
// to the stage named by --emit, and prints it.
//
//===----------------------------------------------------------------------===//

#include <kiln/compiler.h>
#include <kiln/kiln.h>

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

namespace cl = llvm::cl;

namespace {

cl::OptionCategory category("kilnc options");
cl::opt<std::string> input(cl::Positional, cl::desc("[input.mlir]"), cl::init(""),
                           cl::cat(category));
cl::opt<bool> list("list", cl::desc("List the registered kernels and their default configs"),
                   cl::cat(category));
cl::opt<std::string> kernelName("kernel", cl::desc("Trace the registered kernel NAME"),
                                cl::value_desc("NAME"), cl::cat(category));
cl::list<std::string> configs("config", cl::desc("Config entries K=V (repeatable, or K=V,K=V)"),
                              cl::value_desc("K=V"), cl::cat(category));
cl::opt<std::string> emitStage("emit", cl::desc("Stage to print: traced, tile"),
                               cl::value_desc("STAGE"), cl::init("tile"), cl::cat(category));
cl::opt<std::string> arch("arch", cl::desc("GPU target (e.g. sm_90a)"), cl::init("sm_90a"),
                          cl::cat(category));
cl::opt<bool> locations("locations", cl::desc("Print source locations of operations"),
                        cl::cat(category));
cl::opt<std::string> output("o", cl::desc("Output file (default: stdout)"),
                            cl::value_desc("FILE"), cl::init("-"), cl::cat(category));

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
  return 0;
}

kiln::Module loadModule() {
  if (!kernelName.empty()) {
    const kiln::RegisteredKernel *entry = kiln::find_kernel(kernelName);
    if (!entry) {
      std::string known;
      for (const auto &k : kiln::registered_kernels())
        known += (known.empty() ? "" : ", ") + k.name;
      throw kiln::Error("no kernel named '" + kernelName + "' (registered: " + known + ")");
    }
    kiln::Config config;
    for (const std::string &text : configs)
      config = config.merged(kiln::Config::parse(text));
    return entry->kernel.trace(config);
  }
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(input.empty() ? "-" : input.getValue());
  if (!buffer)
    throw kiln::Error("cannot read " + input + ": " + buffer.getError().message());
  return kiln::Module::parse((*buffer)->getBuffer().str(), input.empty() ? std::string("<stdin>") : input.getValue());
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "Kiln compiler driver\n");
  try {
    if (list)
      return listKernels();
    auto stage = kiln::parse_stage(emitStage);
    if (!stage) {
      std::string names;
      for (auto n : kiln::stage_names())
        names += (names.empty() ? "" : ", ") + std::string(n);
      throw kiln::Error("unknown stage '" + emitStage + "' (stages: " + names + ")");
    }
    kiln::Module module = loadModule();
    kiln::CompileOptions options;
    options.arch = arch;
    options.locations = locations;
    std::string text = kiln::emit(module, *stage, options);
    std::error_code error;
    llvm::raw_fd_ostream out(output, error);
    if (error)
      throw kiln::Error("cannot write " + output + ": " + error.message());
    out << text;
    return 0;
  } catch (const kiln::Error &error) {
    std::fprintf(stderr, "kilnc: %s\n", error.what());
    return 1;
  }
}
