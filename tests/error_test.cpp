// error: categories of codes (the core's, a module's, one of our own),
// comparisons, to_string, the registry by name; troupe::exception as the
// base of every exception class of the core, the metrics module and the
// apps (net's in net_test.cpp, opencl's in opencl_errors_test.cpp: they
// need their modules linked).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/cli.hpp"
#include "troupe/metrics/exporter.hpp"
#include "troupe/opencl/errors.hpp"
#include "troupe/troupe.hpp"
#include "troupe/util/exception.hpp"

using namespace std::chrono_literals;
using troupe::errc;
using troupe::error;

namespace widget {

// A module of our own: its codes, its category, the ADL hook.
enum class widget_errc : std::uint16_t { jammed = 1, empty, lost };

const troupe::error_category& category_of(widget_errc) noexcept {
  static constexpr std::string_view texts[] = {"", "jammed", "empty", "lost"};
  static constexpr errc core[] = {errc::runtime_error, errc::runtime_error, errc::runtime_error, errc::actor_exited};
  static const troupe::error_category cat{"widget", texts, core};
  return cat;
}

class widget_error : public std::runtime_error, public troupe::exception {
 public:
  explicit widget_error(const std::string& what) : std::runtime_error{what}, troupe::exception{widget_errc::jammed} {}
};

}  // namespace widget

using widget::widget_errc;

static_assert(troupe::error_code_enum<errc>);
static_assert(troupe::error_code_enum<widget_errc>);
static_assert(troupe::error_code_enum<troupe::opencl::opencl_errc>);
static_assert(!troupe::error_code_enum<int>);
static_assert(!troupe::error_code_enum<troupe::polling>);  // an enum without a category
// The base adds nothing that may throw when an exception is copied.
static_assert(std::is_nothrow_copy_constructible_v<troupe::stream::edge_error>);
static_assert(std::is_nothrow_copy_constructible_v<troupe::metrics::metrics_error>);

TEST(error, the_core_category_holds_errc) {
  const error none;
  EXPECT_FALSE(none);
  EXPECT_EQ(none, errc::none);
  EXPECT_EQ(none.category(), troupe::core_category());
  EXPECT_EQ(troupe::core_category().name(), "troupe");
  EXPECT_EQ(none.to_string(), "none");

  const error e{errc::request_timeout, "no response within 10 ms"};
  EXPECT_TRUE(e);
  EXPECT_EQ(e.category(), troupe::core_category());
  EXPECT_EQ(e.code(), errc::request_timeout);
  EXPECT_EQ(e.value(), static_cast<std::uint16_t>(errc::request_timeout));
  EXPECT_TRUE(e.is(errc::request_timeout));
  EXPECT_EQ(e, errc::request_timeout);
  EXPECT_EQ(errc::request_timeout, e);
  EXPECT_NE(e, errc::runtime_error);
  EXPECT_EQ(e.to_string(), "request_timeout: no response within 10 ms");
  EXPECT_EQ(error{errc::kill}.to_string(), "kill");
  // Errors compare by category and code, never by message.
  EXPECT_EQ(e, (error{errc::request_timeout, "other words"}));
  EXPECT_NE(e, error{errc::actor_exited});
  // By number, through the core category: the same as by errc.
  const error by_number{troupe::core_category(), static_cast<std::uint16_t>(errc::edge_lost), "peer gone"};
  EXPECT_EQ(by_number, (error{errc::edge_lost}));
  EXPECT_EQ(by_number.to_string(), "edge_lost: peer gone");
  EXPECT_EQ(troupe::to_string(errc::invalid_argument), "invalid_argument");
  EXPECT_EQ(troupe::to_string(errc::remote_unreachable), "remote_unreachable");
  EXPECT_EQ(troupe::to_string(static_cast<errc>(200)), "unknown");
}

TEST(error, a_module_category_names_its_codes) {
  const auto& cat = category_of(widget_errc::jammed);
  EXPECT_EQ(cat.name(), "widget");
  EXPECT_EQ(cat.text(2), "empty");
  EXPECT_EQ(cat.text(9), "");  // no such code
  EXPECT_NE(cat, troupe::core_category());

  const error e{widget_errc::jammed, "the feeder is stuck"};
  EXPECT_TRUE(e);
  EXPECT_EQ(e.category(), cat);
  EXPECT_EQ(e.value(), 1);
  EXPECT_EQ(e, widget_errc::jammed);
  EXPECT_EQ(widget_errc::jammed, e);
  EXPECT_NE(e, widget_errc::empty);
  EXPECT_TRUE(e.is(widget_errc::jammed));
  EXPECT_FALSE(e.is(errc::unhandled_exception));  // the same number in another category
  EXPECT_NE(e, error{errc::unhandled_exception});
  EXPECT_EQ(e.to_string(), "widget.jammed: the feeder is stuck");
  EXPECT_EQ(error{widget_errc::empty}.to_string(), "widget.empty");
  EXPECT_EQ((error{cat, 9, "?"}.to_string()), "widget.9: ?");
  EXPECT_EQ(e, (error{widget_errc::jammed, "other words"}));
}

TEST(error, a_module_code_reads_as_the_core_code_its_category_maps_it_to) {
  // code() and == errc: what code that only knows errc sees.
  const error jammed{widget_errc::jammed};
  EXPECT_EQ(jammed.code(), errc::runtime_error);  // the default
  EXPECT_EQ(jammed, errc::runtime_error);
  const error lost{widget_errc::lost};
  EXPECT_EQ(lost.code(), errc::actor_exited);  // mapped by the category
  EXPECT_EQ(lost, errc::actor_exited);
  EXPECT_FALSE(lost.is(errc::actor_exited));  // is(): this very code only
  EXPECT_NE(lost, error{errc::actor_exited});
  // A category without a map: every code is errc::runtime_error.
  const error ocl{troupe::opencl::opencl_errc::no_device, "none"};
  EXPECT_EQ(ocl.code(), errc::runtime_error);
  EXPECT_EQ(ocl.category(), troupe::opencl::opencl_category());
  EXPECT_EQ(ocl.to_string(), "opencl.no_device: none");
}

TEST(error, categories_are_found_by_name_while_they_live) {
  EXPECT_EQ(troupe::error_category::find("troupe"), &troupe::core_category());
  const auto& widget = category_of(widget_errc::jammed);  // made (and registered) on first use
  EXPECT_EQ(troupe::error_category::find("widget"), &widget);
  EXPECT_EQ(troupe::error_category::find("opencl"), &troupe::opencl::opencl_category());
  EXPECT_EQ(troupe::error_category::find("no such category"), nullptr);
  {
    static constexpr std::string_view texts[] = {"", "brief"};
    const troupe::error_category brief{"error_test.brief", texts};
    EXPECT_EQ(troupe::error_category::find("error_test.brief"), &brief);
  }
  EXPECT_EQ(troupe::error_category::find("error_test.brief"), nullptr);
}

TEST(error, a_module_error_keeps_its_category_through_actors) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto a = sys.spawn([](troupe::event_actor& me) {
    return troupe::behavior{[&me](int) { me.quit(error{widget_errc::lost, "fell off"}); }};
  });
  self->monitor(a);
  self->send(a, 1);
  error reason;
  self->receive([&](troupe::down_msg& m) { reason = m.reason; });
  EXPECT_EQ(reason, widget_errc::lost);
  EXPECT_EQ(reason.message(), "fell off");
  EXPECT_EQ(reason.to_string(), "widget.lost: fell off");
}

namespace {

/// Throws what `make` returns, catches it as troupe::exception, as `Std`
/// and as std::exception (one std::exception base: not ambiguous); the
/// troupe::error it gives.
template <class Std, class Make>
error caught(Make make) {
  using thrown = decltype(make());
  static_assert(std::is_base_of_v<troupe::exception, thrown>);
  static_assert(std::is_base_of_v<Std, thrown>);
  error got;
  try {
    throw make();
  } catch (const troupe::exception& e) {
    got = e.error();
  }
  std::string as_std;
  try {
    throw make();
  } catch (const Std& e) {
    as_std = e.what();
  }
  EXPECT_FALSE(as_std.empty());
  try {
    throw make();
  } catch (const std::exception& e) {
    EXPECT_EQ(as_std, e.what());
  }
  return got;
}

}  // namespace

TEST(error, affinity_and_config_errors_are_troupe_exceptions_and_invalid_arguments) {
  auto e = caught<std::invalid_argument>([] {
    try {
      (void)troupe::affinity::parse("<0-");
    } catch (const troupe::affinity_error& x) {
      return x;
    }
    return troupe::affinity_error{"", 0, "not thrown"};
  });
  EXPECT_EQ(e, errc::invalid_argument);
  EXPECT_NE(e.message().find("affinity string"), std::string::npos) << e.message();
  EXPECT_EQ(e.to_string().rfind("invalid_argument: affinity string", 0), 0U) << e.to_string();

  e = caught<std::invalid_argument>([] {
    try {
      troupe::config{}.set("workers", "many");
    } catch (const troupe::config_error& x) {
      return x;
    }
    return troupe::config_error{"", "", "not thrown"};
  });
  EXPECT_EQ(e, errc::invalid_argument);
  EXPECT_NE(e.message().find("workers"), std::string::npos) << e.message();
}

TEST(error, stage_edge_metrics_and_usage_errors_are_troupe_exceptions_and_runtime_errors) {
  // stage_error: the error the asked actor answered with.
  auto e = caught<std::runtime_error>([] { return troupe::stage_error{error{widget_errc::empty, "no parts"}}; });
  EXPECT_EQ(e, widget_errc::empty);
  EXPECT_EQ(e.message(), "no parts");
  const troupe::stage_error s{error{errc::user_shutdown, "bye"}};
  EXPECT_EQ(std::string{s.what()}, "user_shutdown: bye");
  EXPECT_EQ(s.error(), errc::user_shutdown);

  e = caught<std::runtime_error>([] { return troupe::stream::edge_error{"stream edge 'e': rank 1 lost"}; });
  EXPECT_EQ(e, errc::edge_lost);
  EXPECT_EQ(e.to_string(), "edge_lost: stream edge 'e': rank 1 lost");

  e = caught<std::runtime_error>([] { return troupe::metrics::metrics_error{"cannot listen at 127.0.0.1:1"}; });
  EXPECT_EQ(e, errc::runtime_error);
  EXPECT_EQ(e.message(), "cannot listen at 127.0.0.1:1");

  e = caught<std::runtime_error>([] { return troupe_apps::usage_error{"--rate: not a number"}; });
  EXPECT_EQ(e, errc::invalid_argument);

  // A class of our own joins the same way.
  e = caught<std::runtime_error>([] { return widget::widget_error{"stuck"}; });
  EXPECT_EQ(e, widget_errc::jammed);
  EXPECT_EQ(e.to_string(), "widget.jammed: stuck");
}

TEST(error, a_failed_graph_rethrows_a_troupe_exception) {
  // A seq_actor whose actor answers with an error: graph::wait() throws the
  // stage_error, which troupe::exception catches with that very error.
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto refuse = sys.spawn([](troupe::event_actor& self) {
    return troupe::behavior{[&self](int) {
      auto rp = self.make_response_promise();
      rp.deliver(error{widget_errc::empty, "no parts"});
      return rp;
    }};
  });
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{troupe::stream::source([i = 0]() mutable -> std::optional<int> {
                              if (i == 3) return std::nullopt;
                              return i++;
                            }),
                            troupe::seq_actor<int, int>{refuse}, troupe::stream::sink([](int) {})});
  error got;
  try {
    g.wait();
  } catch (const troupe::exception& e) {
    got = e.error();
  }
  EXPECT_EQ(got, widget_errc::empty) << got.to_string();
  EXPECT_EQ(got.message(), "no parts");
}
