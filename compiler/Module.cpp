//===- Module.cpp - kiln::Module ------------------------------------------===//

#include "compiler/ModuleImpl.h"
#include "compiler/Registration.h"
#include "compiler/dialect/tile/Tile.h"

#include <kiln/error.h>

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {

std::shared_ptr<Module::Impl> Module::Impl::clone() const {
  auto copy = std::make_shared<Impl>();
  copy->context = context;
  copy->module = mlir::cast<mlir::ModuleOp>(module.get()->clone());
  return copy;
}

std::shared_ptr<mlir::MLIRContext> threadKilnContext() {
  // Making a context and loading its dialects costs several times what
  // tracing a kernel does (most of a disk-cache hit), so each thread keeps
  // one; modules hold it alive past the thread.
  thread_local std::shared_ptr<mlir::MLIRContext> context = [] {
    auto made = std::make_shared<mlir::MLIRContext>(mlir::MLIRContext::Threading::DISABLED);
    loadKilnDialects(*made);
    return made;
  }();
  return context;
}

std::string Module::str(bool locations) const {
  if (!impl_)
    return "<empty module>";
  std::string text;
  llvm::raw_string_ostream os(text);
  mlir::OpPrintingFlags flags;
  if (locations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/true);
  impl_->module->print(os, flags);
  return text;
}

std::string Module::kernel_name() const {
  if (!impl_)
    return {};
  for (auto func : impl_->module->getOps<tile::FuncOp>())
    return func.getSymName().str();
  return {};
}

void checkNesting(llvm::StringRef text, llvm::StringRef buffer_name) {
  if (text.starts_with("ML\xefR")) // bytecode's magic number
    return;
  // Angle brackets also spell arrows (->) and comparisons (>=, <=): a '>'
  // closes only an open '<', and a closing bracket of another kind closes
  // the '<' left open inside it.
  llvm::SmallVector<char, 32> open;
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    switch (c) {
    case '\n':
      ++line;
      break;
    case '"':
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n')
          ++line;
      break;
    case '/':
      if (next == '/')
        while (i + 1 < text.size() && text[i + 1] != '\n')
          ++i;
      break;
    case '<':
      if (next == '=')
        break;
      [[fallthrough]];
    case '(':
    case '[':
    case '{':
      open.push_back(c);
      if (open.size() > kMaxIRNesting)
        throw Error(buffer_name.str() + ":" + std::to_string(line) + ": error: brackets nest more than " +
                    std::to_string(kMaxIRNesting) + " deep here; Kiln refuses IR nested so deep (MLIR's parser " +
                    "recurses on each level and would overflow the stack)");
      break;
    case '>':
      if (i > 0 && text[i - 1] != '-' && !open.empty() && open.back() == '<')
        open.pop_back();
      break;
    case ')':
    case ']':
    case '}': {
      const char opener = c == ')' ? '(' : c == ']' ? '[' : '{';
      while (!open.empty() && open.back() == '<')
        open.pop_back();
      if (!open.empty() && open.back() == opener)
        open.pop_back();
      break;
    }
    default:
      break;
    }
  }
}

Module Module::parse(const std::string &text, const std::string &buffer_name) {
  checkNesting(text, buffer_name);
  auto impl = std::make_shared<Impl>();
  impl->context = threadKilnContext();
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, buffer_name),
                             llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler handler(sources, impl->context.get(), os);
  impl->module = mlir::parseSourceFile<mlir::ModuleOp>(sources, impl->context.get());
  if (!impl->module)
    throw Error("cannot parse " + buffer_name + ":\n" + diagnostics);
  // Several top-level modules (a file lit splits) parse as modules nested
  // in an implicit one, which no stage expects.
  for (mlir::Operation &op : impl->module->getBody()->getOperations())
    if (mlir::isa<mlir::ModuleOp>(op))
      throw Error(buffer_name + " holds several modules (or a nested one): a kernel file is one module of tile.funcs");
  return Module(std::move(impl));
}

} // namespace kiln
