//===- Kernel.cpp - tracing a kernel into a verified module ---------------===//

#include "dsl/lib/Build.h"
#include "dsl/lib/KernelImpl.h"

#include "compiler/ModuleImpl.h"
#include "compiler/dialect/tile/Tile.h"

#include <kiln/kernel.h>
#include <kiln/registry.h>

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <optional>
#include <set>

namespace kiln {

using namespace detail;

Kernel::Kernel(std::string name, std::vector<ElementType> signature, Body body)
    : impl_(std::make_shared<Impl>()) {
  bool valid_name = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name)
    valid_name = valid_name && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!valid_name)
    throw Error("kernel name '" + name + "' must be a C identifier");
  impl_->name = std::move(name);
  impl_->signature = std::move(signature);
  impl_->body = std::move(body);
}

const std::string &Kernel::name() const { return impl_->name; }
const std::vector<ElementType> &Kernel::signature() const { return impl_->signature; }
Kernel &Kernel::defaults(Config config) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->defaults = std::move(config);
  impl_->recent.clear(); // (keyed by configs before the merge; the cache's keys are merged)
  return *this;
}
const Config &Kernel::default_config() const { return impl_->defaults; }
Kernel &Kernel::space(ConfigSpace space) {
  impl_->space = std::move(space);
  return *this;
}
const ConfigSpace &Kernel::config_space() const { return impl_->space; }
Kernel &Kernel::library(std::string what) {
  impl_->library = std::move(what);
  return *this;
}

namespace {

/// Checks the entries every kernel understands, and the kernel's own
/// constraints.
void validate(const Kernel &kernel, const Config &config) {
  auto reject = [&](const std::string &why) {
    throw Error("config " + config.str() + " is invalid for kernel '" + kernel.name() + "': " + why);
  };
  int warps = config.num_warps();
  if (warps < 1 || warps > 32 || (warps & (warps - 1)) != 0)
    reject("num_warps must be a power of two from 1 to 32, got " + std::to_string(warps));
  if (config.num_stages() < 1 || config.num_stages() > 8)
    reject("num_stages must be 1..8, got " + std::to_string(config.num_stages()));
  // A multiprocessor holds at most 32 programs and 2048 threads, and 64K
  // registers at no fewer than 24 a thread (ptxas's floor).
  const int64_t blocks = config.get("min_blocks_per_sm", 0), threads = blocks * warps * 32;
  if (blocks < 0 || blocks > 32 || threads > 2048 || threads * 24 > 65536)
    reject("min_blocks_per_sm " + std::to_string(blocks) + " programs of " + std::to_string(warps) +
           " warps cannot share a multiprocessor (at most 32 programs, 2048 threads, 65536 registers)");
  if (int64_t specialize = config.get("warp_specialize", 0); specialize != 0 && specialize != 1)
    reject("warp_specialize must be 0 or 1, got " + std::to_string(specialize));
  if (int64_t turns = config.get("ping_pong", 0); turns != 0 && turns != 1)
    reject("ping_pong must be 0 or 1, got " + std::to_string(turns));
  if (int64_t overlap = config.get("overlap_chain", 1); overlap != 0 && overlap != 1)
    reject("overlap_chain must be 0 or 1, got " + std::to_string(overlap));
  if (int64_t fusion = config.get("fp_fusion", 1); fusion != 0 && fusion != 1)
    reject("fp_fusion must be 0 or 1, got " + std::to_string(fusion));
  if (int64_t approx = config.get("approx_div", 1); approx != 0 && approx != 1)
    reject("approx_div must be 0 or 1, got " + std::to_string(approx));
  if (int64_t copy = config.get("copy_engine", 1); copy != 0 && copy != 1)
    reject("copy_engine must be 0 or 1, got " + std::to_string(copy));
  // The compiler's producer warpgroup (gpu::kProducerWarps) runs past num_warps.
  constexpr int64_t producerWarps = 4;
  const int64_t programs = std::max<int64_t>(blocks, 1);
  if (config.warp_specialize() && warps + producerWarps > 32)
    reject("warp_specialize adds a producer warpgroup: num_warps " + std::to_string(warps) +
           " leaves no room for it (at most 32 warps a program)");
  if (config.warp_specialize() && programs * (warps + producerWarps) * 32 > 2048)
    reject("warp_specialize adds a producer warpgroup: " + std::to_string(programs) + " programs of " +
           std::to_string(warps) + " + 4 warps exceed a multiprocessor's 2048 threads");
  if (int64_t cluster = config.get("cluster_size", 1); cluster != 1 && cluster != 2 && cluster != 4 && cluster != 8)
    reject("cluster_size must be 1, 2, 4 or 8 programs (a portable cluster holds at most 8), got " +
           std::to_string(cluster));
  std::string reason = kernel.config_space().check(config);
  if (!reason.empty())
    reject(reason);
}

} // namespace

Module Kernel::trace(const Config &config, const Specialization &spec, std::vector<std::string> *keys_read) const {
  return traceMerged(impl_->defaults.merged(config), spec, keys_read);
}

Module Kernel::traceMerged(const Config &config, const Specialization &spec,
                           std::vector<std::string> *keys_read) const {
  std::optional<LibraryScope> library;
  if (!impl_->library.empty())
    library.emplace(impl_->library);
  validate(*this, config);
  if (!spec.args.empty() && spec.args.size() != impl_->signature.size())
    throw Error("specialization of kernel '" + name() + "' has " + std::to_string(spec.args.size()) +
                " entries for " + std::to_string(impl_->signature.size()) + " parameters");

  auto impl = std::make_shared<Module::Impl>();
  impl->context = threadKilnContext();
  mlir::MLIRContext &context = *impl->context;
  impl->module = mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  TraceContext trace(context, *impl->module);
  mlir::OpBuilder &b = trace.builder();

  llvm::SmallVector<mlir::Type> arg_types;
  for (const ElementType &type : impl_->signature)
    arg_types.push_back(element_type(context, type));
  mlir::Location func_loc = mlir::NameLoc::get(b.getStringAttr(name()));
  auto func = tile::FuncOp::create(b, func_loc, name(), b.getFunctionType(arg_types, {}));
  if (config.cluster_size() > 1)
    (*impl->module)->setAttr(tile::kClusterSizeAttr, b.getI32IntegerAttr(config.cluster_size()));
  for (size_t i = 0; i < spec.args.size(); ++i) {
    if (spec.args[i].divisible_by_16 || spec.args[i].divisible_by_8)
      func.setArgAttr(i, "tile.divisibility", b.getI32IntegerAttr(spec.args[i].divisible_by_16 ? 16 : 8));
    const ElementType &type = impl_->signature[i];
    if (!spec.args[i].nonpositive && !type.is_pointer && type.descriptor_rank == 0 && is_integer(type.dtype))
      func.setArgAttr(i, "tile.positive", b.getUnitAttr());
  }
  // A ConstPtr's memory is taken as unchanged while the kernel runs (no
  // other parameter writes it): loads through it may be issued again.
  for (size_t i = 0; i < impl_->signature.size(); ++i)
    if (impl_->signature[i].is_pointer && impl_->signature[i].is_const)
      func.setArgAttr(i, "tile.readonly", b.getUnitAttr());
  llvm::SmallVector<mlir::Location> arg_locs(arg_types.size(), func_loc);
  mlir::Block *entry = b.createBlock(&func.getBody(), {}, arg_types, arg_locs);
  b.setInsertionPointToStart(entry);

  std::vector<Tensor> args;
  for (size_t i = 0; i < arg_types.size(); ++i) {
    const ElementType &type = impl_->signature[i];
    bool one = i < spec.args.size() && spec.args[i].equal_to_1 && !type.is_pointer &&
               type.descriptor_rank == 0 && is_integer(type.dtype);
    args.push_back(one ? make_constant(0, 1, false, type.dtype, {}, Loc())
                       : TraceAccess::wrap(entry->getArgument(i), type, Loc()));
  }
  impl_->body(config, args);
  if (keys_read) {
    std::set<std::string, std::less<>> names(trace.config_keys());
    names.insert(Config::compiler_keys().begin(), Config::compiler_keys().end());
    keys_read->assign(names.begin(), names.end());
  }
  b.setInsertionPointToEnd(entry);
  tile::ReturnOp::create(b, func_loc);

  // The DSL checks every operation as it is made; the verifier is the net
  // under those checks, reporting at the user's line.
  std::string message;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diagnostic) {
    if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error && message.empty()) {
      std::string where; // (a library's lines mean nothing to its users)
      if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(diagnostic.getLocation()); file && !library)
        where = file.getFilename().str() + ":" + std::to_string(file.getLine()) + ": ";
      message = where + "error: " + diagnostic.str();
    }
    return mlir::success();
  });
  if (mlir::failed(mlir::verify(*impl->module)))
    throw Error((library ? impl_->library + ": " : std::string()) + "kernel '" + name() +
                "' traced to invalid IR: " + message);
  return Module(std::move(impl));
}

namespace {
std::vector<RegisteredKernel> &registry() {
  static std::vector<RegisteredKernel> kernels;
  return kernels;
}
} // namespace

void register_kernel(Kernel kernel, std::string description) {
  if (find_kernel(kernel.name()))
    throw Error("a kernel named '" + kernel.name() + "' is already registered");
  registry().push_back({kernel.name(), std::move(description), std::move(kernel)});
}

const std::vector<RegisteredKernel> &registered_kernels() { return registry(); }

const RegisteredKernel *find_kernel(const std::string &name) {
  for (const RegisteredKernel &kernel : registry())
    if (kernel.name == name)
      return &kernel;
  return nullptr;
}

} // namespace kiln
