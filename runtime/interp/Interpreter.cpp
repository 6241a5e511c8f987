// Compiling a module into closures, and running a grid of programs.

#include "runtime/interp/Interpreter.h"
#include "runtime/interp/Compiler.h"

#include "compiler/ModuleImpl.h"
#include "compiler/dialect/tile/Tile.h"

#include <kiln/numeric.h>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace kiln::interp {

DType float_dtype(mlir::Type type) {
  if (type.isF16())
    return DType::f16;
  if (type.isBF16())
    return DType::bf16;
  if (type.isF32())
    return DType::f32;
  if (type.isF64())
    return DType::f64;
  if (mlir::isa<mlir::Float8E4M3FNType>(type))
    return DType::f8e4m3;
  if (mlir::isa<mlir::Float8E5M2Type>(type))
    return DType::f8e5m2;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  throw Error("the interpreter does not support the float type " + text);
}

double round_float(DType type, double value) { return round_to(type, value); }

namespace {
void describe_scalar(mlir::Type type, Element::Kind &kind, unsigned &width, DType &float_type) {
  if (auto i = mlir::dyn_cast<mlir::IntegerType>(type)) {
    kind = Element::integer;
    width = i.getWidth();
  } else if (mlir::isa<mlir::FloatType>(type)) {
    kind = Element::floating;
    float_type = float_dtype(type);
    width = type.getIntOrFloatBitWidth();
  } else if (mlir::isa<tile::PointerType>(type)) {
    kind = Element::pointer;
    width = 64;
  } else if (mlir::isa<tile::TensorMapType>(type)) {
    kind = Element::tensor_map;
    width = 64;
  } else {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << type;
    throw Error("the interpreter does not support values of type " + text);
  }
}
} // namespace

Element element_of(mlir::Type type) {
  mlir::Type scalar = mlir::getElementTypeOrSelf(type);
  Element el;
  describe_scalar(scalar, el.kind, el.width, el.float_type);
  if (auto ptr = mlir::dyn_cast<tile::PointerType>(scalar))
    describe_scalar(ptr.getPointeeType(), el.pointee_kind, el.pointee_width, el.pointee_float);
  return el;
}

std::string where(mlir::Operation *op) {
  mlir::Location loc = op->getLoc();
  std::string text;
  loc->walk([&](mlir::Location l) {
    if (auto file = mlir::dyn_cast<mlir::FileLineColLoc>(l)) {
      text = file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
             std::to_string(file.getColumn());
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return text.empty() ? std::string("<unknown location>") : text;
}

void fail_at(mlir::Operation *op, const Exec &e, const std::string &message) {
  throw Error(where(op) + ": error: " + message + " (in " + op->getName().getStringRef().str() +
              ", program (" + std::to_string(e.pid[0]) + ", " + std::to_string(e.pid[1]) + ", " +
              std::to_string(e.pid[2]) + "))");
}

unsigned Compiler::slot(mlir::Value value) {
  auto [it, inserted] = slots_.try_emplace(value, next_slot_);
  if (inserted)
    ++next_slot_;
  return it->second;
}

Instr Compiler::compile(mlir::Operation *op) {
  for (auto family : {compile_elementwise, compile_memory, compile_block_op, compile_control_flow})
    if (Instr instr = family(*this, op))
      return instr;
  throw Error(where(op) + ": error: the interpreter does not support '" +
              op->getName().getStringRef().str() + "'");
}

Code Compiler::compile_block(mlir::Block &block) {
  Code code;
  for (mlir::Operation &op : block) {
    if (op.hasTrait<mlir::OpTrait::IsTerminator>())
      continue;
    code.instrs.push_back(compile(&op));
  }
  return code;
}

CompiledRegion compile_region(Compiler &compiler, mlir::Region &region) {
  CompiledRegion compiled;
  mlir::Block &block = region.front();
  for (mlir::BlockArgument arg : block.getArguments())
    compiled.arguments.push_back(compiler.slot(arg));
  compiled.code = compiler.compile_block(block);
  for (mlir::Value v : block.getTerminator()->getOperands())
    compiled.results.push_back(compiler.slot(v));
  compiled.elementwise = is_elementwise_region(region);
  return compiled;
}

std::vector<Data> CompiledRegion::run(Exec &exec, std::vector<Data> args) const {
  for (size_t i = 0; i < arguments.size(); ++i)
    exec.slots[arguments[i]] = std::move(args[i]);
  code.run(exec);
  std::vector<Data> values;
  values.reserve(results.size());
  for (unsigned s : results)
    values.push_back(exec.slots[s]);
  return values;
}

struct Program::Impl {
  Module module; ///< keeps the operations the instructions point at alive
  std::string name;
  std::vector<Element> parameters;
  std::vector<unsigned> parameter_slots;
  Code body;
  unsigned slots = 0;
};

Program::Program(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Program::~Program() = default;

std::shared_ptr<const Program> Program::compile(const Module &module) {
  auto impl = std::make_unique<Impl>();
  impl->module = module;
  tile::FuncOp kernel;
  for (auto func : module.impl().module->getOps<tile::FuncOp>())
    kernel = func;
  if (!kernel)
    throw Error("the module holds no tile.func kernel to interpret");
  impl->name = kernel.getSymName().str();
  Compiler compiler;
  for (mlir::BlockArgument arg : kernel.getBody().getArguments()) {
    impl->parameters.push_back(element_of(arg.getType()));
    impl->parameter_slots.push_back(compiler.slot(arg));
  }
  impl->body = compiler.compile_block(kernel.getBody().front());
  impl->slots = compiler.slot_count();
  return std::make_shared<Program>(std::move(impl));
}

void Program::run(const Grid &grid, std::span<const Arg> args, std::ostream &out) const {
  const Impl &p = *impl_;
  auto bad = [&](size_t i, const std::string &why) {
    throw Error("argument #" + std::to_string(i) + " of kernel '" + p.name + "': " + why);
  };
  if (args.size() != p.parameters.size())
    throw Error("kernel '" + p.name + "' takes " + std::to_string(p.parameters.size()) +
                " arguments, the launch passed " + std::to_string(args.size()));
  Exec exec;
  exec.slots.resize(p.slots);
  std::vector<Region> memory;
  for (size_t i = 0; i < args.size(); ++i) {
    const Element &el = p.parameters[i];
    const Arg &arg = args[i];
    Word word = 0;
    switch (el.kind) {
    case Element::pointer:
      if (arg.kind() != Arg::Kind::memory)
        bad(i, "the kernel expects a pointer, the launch passed a number");
      if (arg.device() != DeviceKind::interp)
        bad(i, "the interpreter needs host memory (an interpreter Buffer or a host span), "
               "not GPU memory");
      if (arg.element_bytes() && arg.element_bytes() != el.pointee_bytes())
        bad(i, "the kernel reads " + std::to_string(el.pointee_bytes()) +
                   "-byte elements, the host span holds " + std::to_string(arg.element_bytes()) +
                   "-byte ones");
      word = arg.address();
      memory.push_back({arg.address(), arg.address() + arg.bytes(), static_cast<unsigned>(i)});
      break;
    case Element::tensor_map:
      if (arg.kind() != Arg::Kind::tensor_map)
        bad(i, "the kernel expects a descriptor (a TensorArg)");
      break;
    case Element::integer: {
      if (arg.kind() != Arg::Kind::integer)
        bad(i, "the kernel expects an integer");
      int64_t v = arg.integer();
      // Accepted when it fits the width as a signed or an unsigned number.
      bool fits = el.width >= 64 ||
                  (v >= -(int64_t(1) << (el.width - 1)) && v < (int64_t(1) << el.width));
      if (!fits)
        bad(i, std::to_string(v) + " does not fit i" + std::to_string(el.width));
      word = static_cast<Word>(v) & width_mask(el.width);
      break;
    }
    case Element::floating:
      if (arg.kind() == Arg::Kind::memory)
        bad(i, "the kernel expects a float, the launch passed memory");
      word = from_double(round_float(el.float_type, arg.kind() == Arg::Kind::floating
                                                        ? arg.floating()
                                                        : static_cast<double>(arg.integer())));
      break;
    }
    exec.slots[p.parameter_slots[i]].words.assign(1, word);
  }
  exec.memory = &memory;
  exec.out = &out;
  exec.programs[0] = grid.x;
  exec.programs[1] = grid.y;
  exec.programs[2] = grid.z;
  for (uint32_t z = 0; z < grid.z; ++z)
    for (uint32_t y = 0; y < grid.y; ++y)
      for (uint32_t x = 0; x < grid.x; ++x) {
        exec.pid[0] = x;
        exec.pid[1] = y;
        exec.pid[2] = z;
        p.body.run(exec);
      }
}

} // namespace kiln::interp
