// troupe::net's launcher support (include/troupe/net/launcher.hpp): the rank
// and size read from Open MPI's, PMI's and Slurm's variables, malformed
// values named, and the address lists of a cluster. Each test starts with
// every launcher variable unset and puts the process's own values back at
// its end. (A launched run of troupe-wc: tests/mpirun_wc_test.py.)
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "troupe/net/launcher.hpp"

namespace net = troupe::net;

namespace {

constexpr std::array<const char*, 6> launcher_variables{
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"};

class net_launcher : public ::testing::Test {
 protected:
  void SetUp() override {
    for (std::size_t i = 0; i < launcher_variables.size(); ++i) {
      if (const char* v = std::getenv(launcher_variables[i])) saved_[i] = v;
      ::unsetenv(launcher_variables[i]);
    }
  }
  void TearDown() override {
    for (std::size_t i = 0; i < launcher_variables.size(); ++i) {
      if (saved_[i]) ::setenv(launcher_variables[i], saved_[i]->c_str(), 1);
      else ::unsetenv(launcher_variables[i]);
    }
  }
  static void set(const char* name, const char* value) { ::setenv(name, value, 1); }

  /// The message of the net_error that from_launcher() throws ("" if none).
  static std::string launcher_error() {
    try {
      (void)net::from_launcher();
    } catch (const net::net_error& e) {
      return e.what();
    }
    return "";
  }

 private:
  std::array<std::optional<std::string>, launcher_variables.size()> saved_;
};

std::vector<std::string> endpoints(const std::vector<net::remote_address>& peers) {
  std::vector<std::string> out;
  for (const auto& p : peers) out.push_back(p.endpoint);
  return out;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const net::net_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_F(net_launcher, no_launcher_is_nullopt) {
  EXPECT_FALSE(net::from_launcher().has_value());
  set("SLURM_PROCID", "");           // set but empty: as unset
  set("OMPI_COMM_WORLD_SIZE", "4");  // a size without a rank says nothing
  EXPECT_FALSE(net::from_launcher().has_value());
}

TEST_F(net_launcher, open_mpi_pmi_and_slurm_give_rank_and_size) {
  set("OMPI_COMM_WORLD_RANK", "3");
  set("OMPI_COMM_WORLD_SIZE", "4");
  auto l = net::from_launcher();
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->launcher, net::launcher::open_mpi);
  EXPECT_EQ(l->rank, 3u);
  EXPECT_EQ(l->size, std::optional<std::size_t>{4});
  EXPECT_EQ(l->rank_variable, "OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(l->size_variable, "OMPI_COMM_WORLD_SIZE");
  EXPECT_STREQ(net::to_string(l->launcher), "Open MPI");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");

  set("PMI_RANK", "0");
  set("PMI_SIZE", "2");
  l = net::from_launcher();
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->launcher, net::launcher::pmi);
  EXPECT_EQ(l->rank, 0u);
  EXPECT_EQ(l->size, std::optional<std::size_t>{2});
  EXPECT_STREQ(net::to_string(l->launcher), "PMI");
  ::unsetenv("PMI_RANK");
  ::unsetenv("PMI_SIZE");

  set("SLURM_PROCID", "7");
  set("SLURM_NTASKS", "8");
  l = net::from_launcher();
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->launcher, net::launcher::slurm);
  EXPECT_EQ(l->rank, 7u);
  EXPECT_EQ(l->size, std::optional<std::size_t>{8});
  EXPECT_EQ(l->rank_variable, "SLURM_PROCID");
  EXPECT_STREQ(net::to_string(l->launcher), "Slurm");
}

TEST_F(net_launcher, a_rank_without_a_size_leaves_the_size_unknown) {
  set("SLURM_PROCID", "5");
  auto l = net::from_launcher();
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->rank, 5u);
  EXPECT_FALSE(l->size.has_value());
  set("SLURM_NTASKS", "");  // empty: as unset
  l = net::from_launcher();
  ASSERT_TRUE(l.has_value());
  EXPECT_FALSE(l->size.has_value());
}

TEST_F(net_launcher, the_mpi_launchers_come_before_slurm) {
  // mpirun inside a Slurm job: the job's SLURM_PROCID is inherited by every rank.
  set("SLURM_PROCID", "0");
  set("SLURM_NTASKS", "1");
  set("PMI_RANK", "1");
  set("PMI_SIZE", "3");
  auto l = net::from_launcher();
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->launcher, net::launcher::pmi);
  EXPECT_EQ(l->rank, 1u);
  set("OMPI_COMM_WORLD_RANK", "2");
  set("OMPI_COMM_WORLD_SIZE", "4");
  l = net::from_launcher();
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->launcher, net::launcher::open_mpi);
  EXPECT_EQ(l->rank, 2u);
  EXPECT_EQ(l->size, std::optional<std::size_t>{4});
}

TEST_F(net_launcher, a_malformed_value_is_named_with_its_variable) {
  for (const char* bad : {"x", "-1", "1.5", " 2", "2 ", "0x3", "99999999999999999999999"}) {
    SCOPED_TRACE(bad);
    set("OMPI_COMM_WORLD_RANK", bad);
    const auto why = launcher_error();
    EXPECT_NE(why.find(std::string{"OMPI_COMM_WORLD_RANK='"} + bad + "'"), std::string::npos) << why;
    EXPECT_NE(why.find("not a whole number"), std::string::npos) << why;
  }
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  set("PMI_RANK", "0");
  set("PMI_SIZE", "two");
  auto why = launcher_error();
  EXPECT_NE(why.find("PMI_SIZE='two' is not a whole number"), std::string::npos) << why;
  set("PMI_SIZE", "0");
  why = launcher_error();
  EXPECT_NE(why.find("PMI_SIZE='0'"), std::string::npos) << why;
}

TEST_F(net_launcher, a_rank_not_below_the_size_is_an_error) {
  set("SLURM_PROCID", "4");
  set("SLURM_NTASKS", "4");
  const auto why = launcher_error();
  EXPECT_NE(why.find("SLURM_PROCID='4' is not below SLURM_NTASKS='4'"), std::string::npos) << why;
  set("SLURM_PROCID", "3");
  EXPECT_EQ(launcher_error(), "");
}

TEST_F(net_launcher, peers_from_one_list) {
  auto peers = net::peers_from_list("tcp://127.0.0.1:7000, tcp://host-b:7001 ,tcp://[::1]:7002,tcp://10.0.0.4:*");
  EXPECT_EQ(endpoints(peers), (std::vector<std::string>{"tcp://127.0.0.1:7000", "tcp://host-b:7001", "tcp://[::1]:7002",
                                                        "tcp://10.0.0.4:*"}));
  for (const auto& p : peers) EXPECT_EQ(p.public_key, "");
  peers = net::peers_from_list("tcp://a:1,tcp://b:2", {"key-a", "key-b"});
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_EQ(peers[0].public_key, "key-a");
  EXPECT_EQ(peers[1].public_key, "key-b");
  EXPECT_EQ(net::peers_from_list("tcp://a:1").size(), 1u);
}

TEST_F(net_launcher, a_malformed_list_names_the_endpoint) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"127.0.0.1:7000,tcp://b:1", "'127.0.0.1:7000' is not an endpoint like tcp://127.0.0.1:7000"},
      {"tcp://a:1,tcp://b", "'tcp://b' is not an endpoint"},
      {"tcp://a:1,tcp://:2", "'tcp://:2' is not an endpoint"},
      {"tcp://a:port", "'tcp://a:port' is not an endpoint"},
      {"tcp://a:65536", "'tcp://a:65536' is not an endpoint"},
      {"tcp://::1:7000", "in brackets"},
      {"tcp://a:1,,tcp://b:2", "an empty endpoint"},
      {"", "an empty endpoint"},
      {"tcp://a:1,", "an empty endpoint"},
  };
  for (const auto& [list, says] : cases) {
    SCOPED_TRACE(list);
    const auto why = error_of([&] { (void)net::peers_from_list(list); });
    EXPECT_NE(why.find(says), std::string::npos) << why;
  }
  const auto why = error_of([] { (void)net::peers_from_list("tcp://a:1,tcp://b:2", {"only-one"}); });
  EXPECT_NE(why.find("1 public keys for 2 ranks"), std::string::npos) << why;
}

TEST_F(net_launcher, peers_from_a_base_port) {
  auto peers = net::peers_from_base_port("127.0.0.1", 7000, 4);
  EXPECT_EQ(endpoints(peers), (std::vector<std::string>{"tcp://127.0.0.1:7000", "tcp://127.0.0.1:7001",
                                                        "tcp://127.0.0.1:7002", "tcp://127.0.0.1:7003"}));
  peers = net::peers_from_base_port("::1", 65534, 2, {"k0", "k1"});
  EXPECT_EQ(endpoints(peers), (std::vector<std::string>{"tcp://[::1]:65534", "tcp://[::1]:65535"}));
  EXPECT_EQ(peers[1].public_key, "k1");
  EXPECT_NE(error_of([] { (void)net::peers_from_base_port("h", 65535, 2); }).find("passes port 65535"),
            std::string::npos);
  EXPECT_NE(error_of([] { (void)net::peers_from_base_port("h", 0, 2); }).find("base port 0"), std::string::npos);
  EXPECT_NE(error_of([] { (void)net::peers_from_base_port("h", 7000, 0); }).find("0 ranks"), std::string::npos);
  EXPECT_NE(error_of([] { (void)net::peers_from_base_port("h", 7000, 2, {"k"}); }).find("1 public keys for 2 ranks"),
            std::string::npos);
}

TEST_F(net_launcher, a_cluster_config_from_the_launcher) {
  const auto four = net::peers_from_base_port("127.0.0.1", 7000, 4);
  auto why = error_of([&] { (void)net::cluster_from_launcher(four); });
  EXPECT_NE(why.find("no launcher's rank in the environment"), std::string::npos) << why;

  set("OMPI_COMM_WORLD_RANK", "2");
  set("OMPI_COMM_WORLD_SIZE", "4");
  const auto cfg = net::cluster_from_launcher(four);
  EXPECT_EQ(cfg.rank, 2u);
  EXPECT_EQ(endpoints(cfg.peers), endpoints(four));

  set("OMPI_COMM_WORLD_SIZE", "3");  // mpirun -np 3 with four addresses
  why = error_of([&] { (void)net::cluster_from_launcher(four); });
  EXPECT_NE(why.find("Open MPI started 3 processes (OMPI_COMM_WORLD_SIZE) but 4 addresses are given"),
            std::string::npos)
      << why;

  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("OMPI_COMM_WORLD_SIZE");
  set("SLURM_PROCID", "5");  // no size: the rank must still have an address
  why = error_of([&] { (void)net::cluster_from_launcher(four); });
  EXPECT_NE(why.find("SLURM_PROCID=5 but 4 addresses are given"), std::string::npos) << why;
}
