//===- CompiledKernel.cpp - a compiled kernel's description as JSON -------===//
//
// The kernel cache keeps a compiled kernel's code as files and its
// description (what loading and launching it needs) as this JSON. Reading
// it back trusts nothing: an entry of another version, or a damaged one,
// is reported, and the cache compiles afresh.
//
//===----------------------------------------------------------------------===//

#include <kiln/compiled_kernel.h>
#include <kiln/error.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>

namespace kiln {

namespace {

/// `value` when it is an integer in [lo, hi]; else throws, before any cast.
int integerIn(const nlohmann::json &value, const char *field, int64_t lo, int64_t hi) {
  // (Every bound is far below 2^63: an unsigned value past one fails.)
  const int64_t v = value.is_number_unsigned()
                        ? static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), static_cast<uint64_t>(hi) + 1))
                    : value.is_number_integer() ? value.get<int64_t>()
                                                : lo - 1;
  if (v < lo || v > hi)
    throw Error(std::string("compiled kernel metadata: ") + field + " is not an integer in [" + std::to_string(lo) +
                ", " + std::to_string(hi) + "]");
  return static_cast<int>(v);
}

int integerField(const nlohmann::json &object, const char *field, int64_t lo, int64_t hi) {
  if (!object.contains(field))
    throw Error(std::string("compiled kernel metadata: no field ") + field);
  return integerIn(object.at(field), field, lo, hi);
}

std::string stringField(const nlohmann::json &object, const char *field) {
  if (!object.contains(field) || !object.at(field).is_string())
    throw Error(std::string("compiled kernel metadata: ") + field + " is not a string");
  return object.at(field).get<std::string>();
}

const nlohmann::json &arrayField(const nlohmann::json &object, const char *field) {
  if (!object.contains(field) || !object.at(field).is_array())
    throw Error(std::string("compiled kernel metadata: ") + field + " is not an array");
  return object.at(field);
}

TensorMapSpec tensorMapFrom(const nlohmann::json &map) {
  if (!map.is_object())
    throw Error("compiled kernel metadata: a tensor map is not an object");
  TensorMapSpec spec;
  for (const auto &extent : arrayField(map, "box"))
    spec.box.push_back(static_cast<uint32_t>(integerIn(extent, "box", 1, 256)));
  if (spec.box.empty() || spec.box.size() > 5)
    throw Error("compiled kernel metadata: a tensor map's box has " + std::to_string(spec.box.size()) +
                " dimensions");
  spec.parameter = integerField(map, "parameter", 0, 1 << 16);
  spec.swizzle_bytes = integerField(map, "swizzle", 0, 128);
  if (!map.contains("base")) // a descriptor's map
    return spec;
  spec.base = integerField(map, "base", 0, 1 << 16);
  for (auto [field, flag] : {std::pair{"offset_rows", &spec.offset_rows}, {"offset_columns", &spec.offset_columns}}) {
    const auto found = map.find(field);
    if (found != map.end() && !found->is_boolean())
      throw Error(std::string("compiled kernel metadata: ") + field + " is not a boolean");
    *flag = found != map.end() && found->get<bool>();
  }
  for (auto [field, sources] : {std::pair{"sizes", &spec.sizes}, std::pair{"strides", &spec.strides}})
    for (const auto &source : arrayField(map, field)) {
      if (!source.is_array() || source.size() != 2)
        throw Error(std::string("compiled kernel metadata: an entry of ") + field + " is not [parameter, constant]");
      sources->push_back({integerIn(source.at(0), field, -1, 1 << 16),
                          integerIn(source.at(1), field, 0, std::numeric_limits<int32_t>::max())});
    }
  if (spec.sizes.size() != spec.box.size() || spec.strides.size() != spec.box.size())
    throw Error("compiled kernel metadata: an added tensor map's sizes and strides do not match its box");
  return spec;
}

nlohmann::json tensorMapJson(const TensorMapSpec &map) {
  nlohmann::json entry = {{"parameter", map.parameter}, {"box", map.box}, {"swizzle", map.swizzle_bytes}};
  if (map.base < 0)
    return entry;
  entry["base"] = map.base;
  entry["offset_rows"] = map.offset_rows;
  entry["offset_columns"] = map.offset_columns;
  for (auto [field, sources] : {std::pair{"sizes", &map.sizes}, std::pair{"strides", &map.strides}}) {
    entry[field] = nlohmann::json::array();
    for (const TensorMapSource &source : *sources)
      entry[field].push_back({source.parameter, source.constant});
  }
  return entry;
}

} // namespace

std::string compiled_kernel_metadata(const CompiledKernel &kernel,
                                     const std::vector<std::pair<std::string, std::string>> &notes) {
  nlohmann::json meta = {{"name", kernel.name},
                         {"arch", kernel.arch},
                         {"num_warps", kernel.num_warps},
                         {"threads_per_warp", kernel.threads_per_warp},
                         {"shared_memory", kernel.shared_memory},
                         {"cluster_size", kernel.cluster_size},
                         {"registers", kernel.registers},
                         {"spill_stores", kernel.spill_stores},
                         {"spill_loads", kernel.spill_loads},
                         {"stack_frame", kernel.stack_frame},
                         {"resources", kernel.resources},
                         {"tensor_maps", nlohmann::json::array()}};
  for (const TensorMapSpec &map : kernel.tensor_maps)
    meta["tensor_maps"].push_back(tensorMapJson(map));
  for (const auto &[name, text] : notes)
    meta[name] = text;
  return meta.dump();
}

CompiledKernel compiled_kernel_from_metadata(std::string_view metadata) {
  nlohmann::json meta = nlohmann::json::parse(metadata, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object())
    throw Error("compiled kernel metadata: not a JSON object");
  CompiledKernel kernel;
  kernel.name = stringField(meta, "name");
  kernel.arch = stringField(meta, "arch");
  kernel.num_warps = integerField(meta, "num_warps", 1, 32);
  kernel.threads_per_warp = integerField(meta, "threads_per_warp", 32, 64);
  if (kernel.threads_per_warp != 32 && kernel.threads_per_warp != 64)
    throw Error("compiled kernel metadata: threads_per_warp is neither 32 nor 64");
  kernel.shared_memory = integerField(meta, "shared_memory", 0, 1 << 20);
  kernel.cluster_size = integerField(meta, "cluster_size", 1, 16);
  kernel.registers = integerField(meta, "registers", 0, 1 << 16);
  kernel.spill_stores = integerField(meta, "spill_stores", 0, 1 << 30);
  kernel.spill_loads = integerField(meta, "spill_loads", 0, 1 << 30);
  kernel.stack_frame = integerField(meta, "stack_frame", 0, 1 << 30);
  kernel.resources = stringField(meta, "resources");
  for (const auto &map : arrayField(meta, "tensor_maps"))
    kernel.tensor_maps.push_back(tensorMapFrom(map));
  return kernel;
}

} // namespace kiln
