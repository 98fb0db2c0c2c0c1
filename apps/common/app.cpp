#include "app.hpp"

#include <cstdio>
#include <iostream>
#include <sstream>

namespace troupe_apps {

output_file::output_file(const std::string& path) {
  if (path.empty()) return;
  out_ = std::make_unique<std::ofstream>(path);
  if (!*out_) throw std::runtime_error("cannot write output file '" + path + "'");
}

void output_file::line(const std::string& s) {
  std::lock_guard<std::mutex> guard{mtx_};
  *out_ << s << '\n';
}

namespace {
constexpr std::pair<const char*, double> quantiles[] = {{"min", 0},    {"p5", 0.05},  {"p25", 0.25}, {"p50", 0.5},
                                                        {"p75", 0.75}, {"p95", 0.95}, {"max", 1}};
}

void run_result::print(std::ostream& out) const {
  out << app << ": " << elapsed_s << " s, source " << source_tuples << " tuples (" << source_rate()
      << " tuples/s), sink " << sink_tuples << " tuples (" << sink_rate() << " tuples/s)";
  if (malformed != 0) out << ", " << malformed << " malformed input lines skipped";
  out << "\nlatency (us):";
  for (auto& [name, q] : quantiles) out << ' ' << name << ' ' << static_cast<double>(latency.percentile(q)) / 1000.0;
  out << " (" << latency.count() << " measured)\n";
}

std::string run_result::to_json() const {
  std::ostringstream o;
  o << "{\"app\":\"" << app << "\",\"elapsed_s\":" << elapsed_s << ",\"source_tuples\":" << source_tuples
    << ",\"sink_tuples\":" << sink_tuples << ",\"source_tuples_per_s\":" << source_rate()
    << ",\"sink_tuples_per_s\":" << sink_rate() << ",\"malformed_lines\":" << malformed << ",\"parallelism\":[";
  for (std::size_t i = 0; i < parallelism.size(); ++i) o << (i ? "," : "") << parallelism[i];
  o << "],\"latency_us\":{\"count\":" << latency.count();
  for (auto& [name, q] : quantiles) o << ",\"" << name << "\":" << static_cast<double>(latency.percentile(q)) / 1000.0;
  o << "}}";
  return o.str();
}

run_result collect(const std::string& app, const troupe::stream::graph& g, std::uint64_t malformed,
                   std::vector<std::size_t> parallelism, double elapsed_s) {
  run_result r;
  r.app = app;
  r.elapsed_s = elapsed_s;
  r.malformed = malformed;
  r.parallelism = std::move(parallelism);
  auto m = g.metrics();
  for (auto& n : m.nodes) {
    if (n.name == "source") r.source_tuples += n.items_out;
    if (n.name == "sink") r.sink_tuples += n.items_in;
  }
  r.latency = m.latency;
  return r;
}

int fail(const std::string& program, const std::string& message, bool show_usage,
         const std::vector<std::string>& operators) {
  std::fprintf(stderr, "%s: %s\n", program.c_str(), message.c_str());
  if (show_usage) std::fputs(cli::usage(program, operators).c_str(), stderr);
  return 2;
}

}  // namespace troupe_apps
