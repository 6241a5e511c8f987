//===- Views.h - checking the tensors an op is called with ------*- C++ -*-===//

#pragma once

#include <kiln/kiln.h>
#include <kiln/ops/view.h>

#include <string>
#include <utility>
#include <vector>

namespace kiln::ops {

/// Throws kiln::Error "<op>: <role> <why>" unless `view` is usable: an
/// address, a rank of at most 8, strides (if given) one per dimension and
/// not negative, no negative sizes.
void check_view(const TensorView &view, const std::string &op, const std::string &role);
/// check_view of each present view (a nonzero address) of `views`, named by
/// `roles`: before anything sizes a plan or a tuning key from them.
void check_present_views(const std::vector<std::pair<const TensorView *, const char *>> &views,
                         const std::string &op);
/// Throws unless every element of the output `view` has memory of its own:
/// ordered by stride, each dimension must step past all that the smaller
/// ones reach (a sufficient test; a zero stride or rows that overlap fail
/// it). An empty view writes nothing and passes.
void check_no_overlap(const TensorView &view, const std::string &op, const std::string &role);
/// Every view on the stream's device kind.
void check_devices(const std::vector<const TensorView *> &views, const Stream &stream, const std::string &op);

/// The launch argument of a view: its address, and (for the interpreter's
/// checks) the bytes it spans.
Arg arg_of(const TensorView &view);

} // namespace kiln::ops
