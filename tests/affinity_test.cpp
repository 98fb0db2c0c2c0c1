// Tests for troupe/util/affinity.hpp: the affinity-string grammar, its error
// reports, the machine check and pinning a thread.
#include "troupe/util/affinity.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using troupe::affinity;
using troupe::affinity_error;
using cores = std::vector<int>;

// Parses `text` expecting an affinity_error; returns it (or a dummy after a
// test failure).
affinity_error parse_error(const std::string& text, bool for_machine = false) {
  try {
    if (for_machine) {
      (void)affinity::parse_for_machine(text);
    } else {
      (void)affinity::parse(text);
    }
  } catch (const affinity_error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "\"" << text << "\": wrong exception: " << e.what();
    return affinity_error(text, 0, "wrong exception");
  }
  ADD_FAILURE() << "\"" << text << "\" parsed but should not have";
  return affinity_error(text, 0, "no exception");
}

// Asserts the error for `text` is at `pos` and its problem mentions `what`.
void expect_error(const std::string& text, std::size_t pos, const std::string& what, bool for_machine = false) {
  SCOPED_TRACE("text: \"" + text + "\"");
  affinity_error e = parse_error(text, for_machine);
  EXPECT_EQ(e.position(), pos) << e.what();
  EXPECT_NE(e.problem().find(what), std::string::npos) << "problem: " << e.problem();
  EXPECT_EQ(e.text(), text);
}

TEST(affinity, default_is_empty) {
  affinity a;
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.group_count(), 0u);
  EXPECT_EQ(a.text(), "");
  EXPECT_THROW((void)a.for_thread(0), std::out_of_range);
  EXPECT_THROW((void)a.group(0), std::out_of_range);
}

TEST(affinity, empty_and_blank_strings_mean_no_affinity) {
  for (const char* s : {"", " ", "\t", "  \t  "}) {
    affinity a = affinity::parse(s);
    EXPECT_TRUE(a.empty()) << '"' << s << '"';
    EXPECT_EQ(a.group_count(), 0u);
    EXPECT_EQ(a.text(), s);
  }
}

TEST(affinity, paper_example_and_modulo_mapping) {
  affinity a = affinity::parse("<0> <2-4> <1, 5>");
  ASSERT_EQ(a.group_count(), 3u);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a.text(), "<0> <2-4> <1, 5>");
  EXPECT_EQ(a.group(0), (cores{0}));
  EXPECT_EQ(a.group(1), (cores{2, 3, 4}));
  EXPECT_EQ(a.group(2), (cores{1, 5}));
  EXPECT_EQ(a.for_thread(0), (cores{0}));
  EXPECT_EQ(a.for_thread(1), (cores{2, 3, 4}));
  EXPECT_EQ(a.for_thread(2), (cores{1, 5}));
  EXPECT_EQ(a.for_thread(3), (cores{0}));
  EXPECT_EQ(a.for_thread(4), (cores{2, 3, 4}));
  EXPECT_EQ(a.for_thread(3002), (cores{1, 5}));
  EXPECT_THROW((void)a.group(3), std::out_of_range);
}

TEST(affinity, single_group_serves_every_thread) {
  affinity a = affinity::parse("<0-1>");
  ASSERT_EQ(a.group_count(), 1u);
  for (std::size_t t = 0; t < 10; ++t) {
    EXPECT_EQ(a.for_thread(t), (cores{0, 1}));
  }
}

TEST(affinity, groups_are_sorted_and_deduplicated) {
  affinity a = affinity::parse("<5,1,3-4,2-3,1> <7,7,7> <0-3,1-2>");
  ASSERT_EQ(a.group_count(), 3u);
  EXPECT_EQ(a.group(0), (cores{1, 2, 3, 4, 5}));
  EXPECT_EQ(a.group(1), (cores{7}));
  EXPECT_EQ(a.group(2), (cores{0, 1, 2, 3}));
}

TEST(affinity, degenerate_range_and_leading_zeros) {
  affinity a = affinity::parse("<3-3><007>");
  ASSERT_EQ(a.group_count(), 2u);
  EXPECT_EQ(a.group(0), (cores{3}));
  EXPECT_EQ(a.group(1), (cores{7}));
}

TEST(affinity, whitespace_variations) {
  const cores g0{0}, g1{2, 3, 4}, g2{1, 5};
  for (const char* s : {"<0><2-4><1,5>", "<0> <2-4> <1, 5>", "  <0>  <2-4>  <1,5>  ", "< 0 > < 2 - 4 > < 1 , 5 >",
                        "\t<0>\t<2\t-\t4>\t<1\t,\t5>\t", "<0>\n<2-4>\r\n<1,5>\n"}) {
    SCOPED_TRACE(s);
    affinity a = affinity::parse(s);
    ASSERT_EQ(a.group_count(), 3u);
    EXPECT_EQ(a.group(0), g0);
    EXPECT_EQ(a.group(1), g1);
    EXPECT_EQ(a.group(2), g2);
  }
}

TEST(affinity, largest_core_id_is_accepted) {
  const std::string top = std::to_string(affinity::max_core_id);
  affinity a = affinity::parse("<" + top + ">");
  EXPECT_EQ(a.group(0), (cores{affinity::max_core_id}));
}

TEST(affinity, error_message_names_string_position_and_problem) {
  affinity_error e = parse_error("<0> <2-x>");
  EXPECT_EQ(e.position(), 7u);
  EXPECT_EQ(e.text(), "<0> <2-x>");
  const std::string what = e.what();
  EXPECT_NE(what.find("affinity string \"<0> <2-x>\""), std::string::npos) << what;
  EXPECT_NE(what.find("at position 7"), std::string::npos) << what;
  EXPECT_NE(what.find("expected a core id"), std::string::npos) << what;
  EXPECT_NE(what.find(e.problem()), std::string::npos) << what;
  // It is an invalid_argument.
  EXPECT_THROW((void)affinity::parse("<"), std::invalid_argument);
}

TEST(affinity, error_missing_open_bracket) {
  expect_error("0>", 0, "expected '<'");
  expect_error("  1-2>", 2, "expected '<'");
  expect_error("<0> 1>", 4, "expected '<'");
  expect_error("<0>,<1>", 3, "expected '<'");
}

TEST(affinity, error_missing_close_bracket) {
  expect_error("<0", 2, "missing '>'");
  expect_error("<0-3 ", 5, "missing '>'");
  expect_error("<0> <1,2", 8, "missing '>' to close the group opened at position 4");
  expect_error("<0 <1>", 3, "missing '>'");
  expect_error("<", 1, "expected a core id");
  expect_error("<0>   <", 7, "missing '>'");
}

TEST(affinity, error_empty_group) {
  expect_error("<>", 1, "empty group");
  expect_error("<0> < >", 6, "empty group");
}

TEST(affinity, error_junk_characters) {
  expect_error("<0x>", 2, "found 'x'");
  expect_error("<a>", 1, "expected a core id");
  expect_error("<1;2>", 2, "found ';'");
  expect_error("<1 2>", 3, "separate core ids with ','");
  expect_error("<0> # comment", 4, "found '#'");
  expect_error("<+1>", 1, "found '+'");
  expect_error(std::string("<0>\x01"), 3, "\\x01");
}

TEST(affinity, error_dangling_comma) {
  expect_error("<1,>", 3, "dangling ','");
  expect_error("<1, >", 4, "expected a core id after ','");
  expect_error("<1,,2>", 3, "expected a core id after ','");
  expect_error("<,1>", 1, "expected a core id");
}

TEST(affinity, error_dangling_dash) {
  expect_error("<1->", 3, "dangling '-'");
  expect_error("<1 - >", 5, "expected a core id after '-'");
  expect_error("<1-", 3, "expected a core id after '-'");
  expect_error("<1-2-3>", 4, "expected ',' or '>' after range 1-2");
}

TEST(affinity, error_reversed_range) {
  expect_error("<4-2>", 3, "range end 2 is below its start 4");
  expect_error("<0> <1, 10 - 9>", 13, "range end 9 is below its start 10");
}

TEST(affinity, error_number_too_large) {
  expect_error("<99999999999>", 1, "too large");
  expect_error("<0-99999999999999999999999999999999999>", 3, "too large");
  const std::string over = std::to_string(affinity::max_core_id + 1);
  expect_error("<1> <" + over + ">", 5, "core id " + over + " is too large");
}

TEST(affinity, error_negative_numbers) {
  expect_error("<-1>", 1, "cannot be negative");
  expect_error("<0, -3>", 4, "cannot be negative");
  expect_error("<2--3>", 3, "expected a core id after '-'");
  expect_error("-<1>", 0, "expected '<'");
}

TEST(affinity, error_text_after_last_group) {
  expect_error("<0> <1> x", 8, "after the last group");
  expect_error("<0>>", 3, "found '>'");
  expect_error("<0> 5", 4, "expected '<'");
}

TEST(affinity, error_too_many_cores_in_total) {
  std::string s;
  for (int i = 0; i < 70; ++i) s += "<0-65535>";
  affinity_error e = parse_error(s);
  EXPECT_NE(e.problem().find("too many cores"), std::string::npos) << e.problem();
  EXPECT_EQ(e.position() % 9, 0u);
}

TEST(affinity, available_cores_is_sorted_and_nonempty) {
  cores av = troupe::available_cores();
  ASSERT_FALSE(av.empty());
  EXPECT_TRUE(std::is_sorted(av.begin(), av.end()));
  EXPECT_EQ(std::adjacent_find(av.begin(), av.end()), av.end());
  EXPECT_GE(av.front(), 0);
}

TEST(affinity, parse_for_machine_accepts_available_cores) {
  cores av = troupe::available_cores();
  ASSERT_FALSE(av.empty());
  const std::string first = std::to_string(av.front());
  affinity a = affinity::parse_for_machine("<" + first + ">");
  EXPECT_EQ(a.group(0), (cores{av.front()}));
  // Every available core, one per group.
  std::string all;
  for (int c : av) all += "<" + std::to_string(c) + "> ";
  EXPECT_EQ(affinity::parse_for_machine(all).group_count(), av.size());
  EXPECT_TRUE(affinity::parse_for_machine("").empty());
  // Core 0 is available on ordinary machines (not under a restricted mask).
  if (av.front() == 0) {
    EXPECT_EQ(affinity::parse_for_machine("<0>").group(0), (cores{0}));
  }
}

TEST(affinity, parse_for_machine_rejects_unavailable_cores) {
  cores av = troupe::available_cores();
  ASSERT_FALSE(av.empty());
  const int missing = av.back() + 1;  // e.g. the number of cores
  const std::string m = std::to_string(missing);
  const std::string f = std::to_string(av.front());
  // A single id: the error points at it.
  const std::string two = "<" + f + "> <" + m + ">";
  expect_error(two, 4 + f.size(), "core " + m + " is not available", true);
  expect_error(two, 4 + f.size(), "(available: ", true);
  expect_error("<4096>", 1, "is not available on this machine", true);
  // A range whose end is missing points at the end.
  const std::string text = "<" + f + "-" + m + ">";
  expect_error(text, 2 + f.size(), "core " + m + " (in range " + f + "-" + m, true);
  // A range whose start is missing points at the start.
  expect_error("<" + m + "-" + std::to_string(missing + 5) + ">", 1, "core " + m + " (in range", true);
  // parse alone accepts the same strings.
  EXPECT_NO_THROW((void)affinity::parse(text));
  EXPECT_NO_THROW((void)affinity::parse("<4096>"));
}

TEST(affinity, parse_for_machine_message_lists_available_cores) {
  cores av = troupe::available_cores();
  affinity_error e = parse_error("<4096>", true);
  std::string expected;
  if (av == cores{0, 1}) {
    expected = "(available: 0-1)";
  } else {
    expected = "(available: " + std::to_string(av.front());
  }
  EXPECT_NE(e.problem().find(expected), std::string::npos) << e.problem();
}

TEST(affinity, pin_current_thread_to_first_available_core) {
  const cores av = troupe::available_cores();
  ASSERT_FALSE(av.empty());
  const int target = av.front();
  bool pinned = false;
  int cpu = -1;
  bool mask_ok = false;
  std::thread t([&] {
    pinned = troupe::pin_current_thread({target});
    cpu = sched_getcpu();
    cpu_set_t set;
    CPU_ZERO(&set);
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0) {
      mask_ok = CPU_COUNT(&set) == 1 && CPU_ISSET(target, &set);
    }
  });
  t.join();
  EXPECT_TRUE(pinned);
  EXPECT_EQ(cpu, target);
  EXPECT_TRUE(mask_ok);
}

TEST(affinity, pin_current_thread_to_a_group) {
  const cores av = troupe::available_cores();
  affinity a = affinity::parse_for_machine("<" + std::to_string(av.front()) + "-" + std::to_string(av.back()) + ">");
  bool pinned = false;
  int cpu = -1;
  std::thread t([&] {
    pinned = troupe::pin_current_thread(a.for_thread(0));
    cpu = sched_getcpu();
  });
  t.join();
  EXPECT_TRUE(pinned);
  EXPECT_GE(cpu, av.front());
  EXPECT_LE(cpu, av.back());
}

TEST(affinity, pin_current_thread_failures_do_not_throw) {
  bool empty_ok = false, negative = true, too_big = true, absent = true;
  std::thread t([&] {
    empty_ok = troupe::pin_current_thread({});
    negative = troupe::pin_current_thread({-1});
    too_big = troupe::pin_current_thread({affinity::max_core_id + 1});
    // A core id far beyond any real machine: the OS refuses the mask.
    absent = troupe::pin_current_thread({affinity::max_core_id});
  });
  t.join();
  EXPECT_TRUE(empty_ok);
  EXPECT_FALSE(negative);
  EXPECT_FALSE(too_big);
  EXPECT_FALSE(absent);
}

TEST(affinity, random_strings_parse_or_throw_affinity_error) {
  const std::string alphabet = "<>-, 0123456789x";
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<std::size_t> len(0, 40);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  int parsed = 0, rejected = 0;
  for (int n = 0; n < 2000; ++n) {
    std::string s;
    // Bias half of the strings towards well-formed-looking input.
    const std::size_t l = len(rng);
    for (std::size_t i = 0; i < l; ++i) s += alphabet[pick(rng)];
    if (n % 2 == 0 && !s.empty()) {
      s.front() = '<';
      s.back() = '>';
    }
    try {
      affinity a = affinity::parse(s);
      ++parsed;
      EXPECT_EQ(a.text(), s);
      for (std::size_t g = 0; g < a.group_count(); ++g) {
        const cores& c = a.group(g);
        EXPECT_FALSE(c.empty()) << s;
        EXPECT_TRUE(std::is_sorted(c.begin(), c.end())) << s;
        EXPECT_EQ(std::adjacent_find(c.begin(), c.end()), c.end()) << s;
      }
    } catch (const affinity_error& e) {
      ++rejected;
      EXPECT_LE(e.position(), s.size()) << s;
      EXPECT_FALSE(e.problem().empty()) << s;
      EXPECT_EQ(e.text(), s);
    } catch (...) {
      ADD_FAILURE() << "unexpected exception type for \"" << s << "\"";
    }
  }
  EXPECT_GT(rejected, 0);
  (void)parsed;
}

TEST(affinity, random_well_formed_strings_parse) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> id(0, 200), count(1, 4), coin(0, 1);
  for (int n = 0; n < 500; ++n) {
    std::string s;
    std::vector<cores> expected;
    const int groups = count(rng);
    for (int g = 0; g < groups; ++g) {
      s += coin(rng) ? "<" : " < ";
      cores want;
      const int ranges = count(rng);
      for (int r = 0; r < ranges; ++r) {
        if (r > 0) s += coin(rng) ? "," : " , ";
        int lo = id(rng), hi = id(rng);
        if (lo > hi) std::swap(lo, hi);
        if (coin(rng)) hi = lo;
        s += std::to_string(lo);
        if (hi != lo || coin(rng)) {
          s += (coin(rng) ? "-" : " - ") + std::to_string(hi);
        }
        for (int c = lo; c <= hi; ++c) want.push_back(c);
      }
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
      expected.push_back(want);
      s += ">";
    }
    SCOPED_TRACE(s);
    affinity a = affinity::parse(s);
    ASSERT_EQ(a.group_count(), expected.size());
    for (std::size_t g = 0; g < expected.size(); ++g) {
      EXPECT_EQ(a.group(g), expected[g]);
    }
  }
}

}  // namespace
