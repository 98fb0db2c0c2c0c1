// Google Benchmark figures of troupe::net's value codec (codec.hpp): writing
// and reading one 64-byte struct with 11 bytes of padding and a bool, field
// by field (the default: 53 bytes, the bool checked) and as its 64 bytes
// (opted in with troupe::net::raw_bytes): common/record64.hpp.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "common/record64.hpp"

namespace {

template <class T>
void write_read(benchmark::State& state) {
  troupe::net::add_type<T>("record64");
  T v;
  v.kind = 7;
  v.flag = true;
  std::string buf;
  buf.reserve(256);
  for (auto _ : state) {
    buf.clear();
    troupe::net::writer w{buf, nullptr};
    ++v.id;
    troupe::net::codec<T>::write(w, v);
    troupe::net::reader r{buf.data(), buf.data() + buf.size(), nullptr};
    T out;
    troupe::net::codec<T>::read(r, out);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * buf.size()));
}

void net_codec_fields(benchmark::State& state) { write_read<bench::record64>(state); }
void net_codec_raw(benchmark::State& state) { write_read<bench::record64_raw>(state); }

}  // namespace

BENCHMARK(net_codec_fields);
BENCHMARK(net_codec_raw);
