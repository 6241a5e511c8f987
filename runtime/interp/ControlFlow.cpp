// scf.for, scf.if and scf.while.

#include "runtime/interp/Compiler.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/TypeSwitch.h"

#include <memory>

namespace kiln::interp {

namespace {

std::vector<unsigned> slots_of(Compiler &c, mlir::ValueRange values) {
  std::vector<unsigned> slots;
  for (mlir::Value v : values)
    slots.push_back(c.slot(v));
  return slots;
}

std::vector<Data> read_slots(Exec &e, const std::vector<unsigned> &slots) {
  std::vector<Data> values;
  for (unsigned s : slots)
    values.push_back(e.slots[s]);
  return values;
}

void write_slots(Exec &e, const std::vector<unsigned> &slots, std::vector<Data> values) {
  for (size_t i = 0; i < slots.size(); ++i)
    e.slots[slots[i]] = std::move(values[i]);
}

} // namespace

Instr compile_control_flow(Compiler &c, mlir::Operation *op) {
  return llvm::TypeSwitch<mlir::Operation *, Instr>(op)
      .Case([&](mlir::scf::ForOp loop) -> Instr {
        unsigned lb = c.slot(loop.getLowerBound()), ub = c.slot(loop.getUpperBound()),
                 step = c.slot(loop.getStep());
        unsigned w = element_of(loop.getLowerBound().getType()).width;
        std::vector<unsigned> inits = slots_of(c, loop.getInitArgs());
        std::vector<unsigned> results = slots_of(c, loop.getResults());
        auto body = std::make_shared<CompiledRegion>(compile_region(c, loop.getRegion()));
        return [=](Exec &e) {
          int64_t lo = sign_extend(e.slots[lb].words[0], w), hi = sign_extend(e.slots[ub].words[0], w),
                  st = sign_extend(e.slots[step].words[0], w);
          std::vector<Data> carried = read_slots(e, inits);
          if (st <= 0 && lo < hi)
            throw Error("scf.for with a non-positive step (" + std::to_string(st) + ")");
          for (int64_t iv = lo; iv < hi; iv += st) {
            std::vector<Data> args;
            args.push_back(Data{{static_cast<Word>(iv) & width_mask(w)}});
            for (Data &d : carried)
              args.push_back(std::move(d));
            carried = body->run(e, std::move(args));
          }
          write_slots(e, results, std::move(carried));
        };
      })
      .Case([&](mlir::scf::IfOp branch) -> Instr {
        unsigned cond = c.slot(branch.getCondition());
        std::vector<unsigned> results = slots_of(c, branch.getResults());
        auto then_region = std::make_shared<CompiledRegion>(compile_region(c, branch.getThenRegion()));
        std::shared_ptr<CompiledRegion> else_region;
        if (!branch.getElseRegion().empty())
          else_region = std::make_shared<CompiledRegion>(compile_region(c, branch.getElseRegion()));
        return [=](Exec &e) {
          if (e.slots[cond].words[0])
            write_slots(e, results, then_region->run(e, {}));
          else if (else_region)
            write_slots(e, results, else_region->run(e, {}));
        };
      })
      .Case([&](mlir::scf::WhileOp loop) -> Instr {
        std::vector<unsigned> inits = slots_of(c, loop.getInits());
        std::vector<unsigned> results = slots_of(c, loop.getResults());
        auto before = std::make_shared<CompiledRegion>(compile_region(c, loop.getBefore()));
        auto after = std::make_shared<CompiledRegion>(compile_region(c, loop.getAfter()));
        // The condition op's first operand decides; the rest are forwarded.
        return [=](Exec &e) {
          std::vector<Data> carried = read_slots(e, inits);
          while (true) {
            std::vector<Data> checked = before->run(e, std::move(carried));
            bool go_on = checked.front().words[0] != 0;
            std::vector<Data> forwarded(std::make_move_iterator(checked.begin() + 1),
                                        std::make_move_iterator(checked.end()));
            if (!go_on) {
              write_slots(e, results, std::move(forwarded));
              return;
            }
            carried = after->run(e, std::move(forwarded));
          }
        };
      })
      .Default([](mlir::Operation *) { return Instr(); });
}

} // namespace kiln::interp
