// record64.hpp: a 64-byte struct with padding and a bool, crossing troupe::net
// field by field (record64: 53 bytes on the wire, the bool checked) or as its
// 64 bytes (record64_raw, opted in with troupe::net::raw_bytes): what the safe
// wire costs (bench_micro's net_codec_*, remote_throughput's troupe_fields and
// troupe_raw). Both are named "record64" (add_type); their network names differ.
#pragma once

#include <cstdint>
#include <tuple>

#include <troupe/net/codec.hpp>

namespace bench {

/// 64 bytes: 4 of padding after `kind`, 7 after `flag`.
struct record64 {
  std::uint64_t id = 0;
  std::uint32_t kind = 0;
  double values[5] = {};
  bool flag = false;
  auto fields() { return std::tie(id, kind, values, flag); }
};
static_assert(sizeof(record64) == 64);
/// The same layout, crossing as its bytes (raw_bytes takes precedence over fields()).
struct record64_raw : record64 {};

}  // namespace bench

template <>
struct troupe::net::raw_bytes<bench::record64_raw> {
  static constexpr std::uint32_t version = 1;
};
