// Property tests for DESIGN.md rules 1-3: random step functions (tests/support/property_gen.*) run eagerly,
// through TinyJit (call 0 eager, 1 capture, 2..5 replay) with pruning and planning on and off, and on
// a host reference of the same kernels; every call's outputs and the final state must agree bit for
// bit. The engine's one-time set must equal a plain fixpoint written from the rule text, and the
// mutation switches (a broken planner, tinygrad's pruning rule, a version check that ignores writes)
// must be detected.
//
//   ENCORE_PROPERTY_SEEDS=N   run N seeds (default 600 on the OpenCL device, 1500 structure-only on NULL,
//                             1200 over two devices, 600 structure-only over two NULL devices; a quarter
//                             of that with ENCORE_SANITIZED=1)
//   ENCORE_TEST_DEVICE_SPLIT=pair|sub   the two devices of the two-device run (tests/support/device_pair.hpp)
//   ENCORE_PROPERTY_SEED=S    run only seed S (what a failure prints)
#include <gtest/gtest.h>
#include "testing.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "encore/device.hpp"
#include "encore/jit.hpp"
#include "encore/memory_planner.hpp"
#include "property_gen.hpp"
#include "device_pair.hpp"
#include "test_util.hpp"
#include "core/device_impl.hpp"
#include "unit/prune.hpp"

namespace {

using prop::KId;
using prop::Op;
using prop::Prog;
using prop::RunResult;
using prop::Ty;
using prop::Value;

int env_int(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : dflt;
}

// Seeds to run: ENCORE_PROPERTY_SEED=S alone, else 0..ENCORE_PROPERTY_SEEDS-1 (the default is a
// quarter under the sanitizers, ENCORE_SANITIZED=1).
std::vector<uint64_t> seeds(int dflt) {
  if (env_int("ENCORE_SANITIZED", 0)) dflt /= 4;
  if (const char* s = std::getenv("ENCORE_PROPERTY_SEED"); s && *s) return {std::strtoull(s, nullptr, 10)};
  std::vector<uint64_t> v;
  int n = env_int("ENCORE_PROPERTY_SEEDS", dflt);
  for (int i = 0; i < n; ++i) v.push_back(static_cast<uint64_t>(i));
  return v;
}
bool single_seed() {
  const char* s = std::getenv("ENCORE_PROPERTY_SEED");
  return s && *s;
}

std::string repro(uint64_t seed, const char* filter = "Property.*") {
  return "reproduce: ENCORE_PROPERTY_SEED=" + std::to_string(seed) + " ENCORE_CACHE=$(mktemp -d) ./build/tests/encore-internal-tests --gtest_filter='" +
         filter + "'";
}

// The OpenCL device, or a null handle when there is none (the CL tests skip).
encore::Device cl_device() {
  if (!encore_test::have_cl()) return encore::Device();
  static encore::Device d = [] {
    try {
      encore::Device x = encore::Device::open();
      return x.is_null() ? encore::Device() : x;
    } catch (const std::exception&) {
      return encore::Device();
    }
  }();
  return d;
}

encore::JitOptions jit_options(bool prune, bool plan) {
  encore::JitOptions o;
  o.enabled = true;
  o.unit.prune = prune;
  o.unit.plan = plan;
  o.verify = 0;
  return o;
}

std::string bits(const std::vector<bool>& v) {
  std::string s;
  for (bool b : v) s += b ? '1' : '0';
  return s;
}

struct Counts {
  int seeds = 0, arena_reuse = 0, pruned_seeds = 0, loop_carried = 0, host_update_replay = 0, host_update_hits_one_time = 0,
      input_written = 0, var_size = 0, var_scalar = 0, counter = 0, rng = 0, cycle = 0, table = 0, late_table = 0, views = 0,
      copies = 0, uploads = 0, edit_output = 0, configs_run = 0, ratio_over = 0, feedback = 0, ring = 0, freed = 0, dup = 0, edit_hits_one_time = 0, cross_copies = 0, fills = 0;
  size_t items = 0, pruned_items = 0, planned_temps = 0;
  double worst_ratio = 1.0;
  uint64_t worst_ratio_seed = 0;
};

// Structural checks of one jit run against the reference: one-time set, item count, planner figures.
std::string check_structure(const Prog& p, const std::vector<prop::RefItem>& items, const std::vector<bool>& ref_one, const RunResult& j,
                            bool prune, bool plan, Counts* c) {
  std::ostringstream s;
  if (!j.error.empty()) return "jit threw: " + j.error;
  if (j.unit_items != items.size()) {
    s << "unit has " << j.unit_items << " items, the step issued " << items.size();
    return s.str();
  }
  std::vector<bool> expect = prune ? ref_one : std::vector<bool>(items.size(), false);
  if (j.one_time != expect) {
    s << "one-time set: engine " << bits(j.one_time) << ", reference fixpoint " << bits(expect);
    return s.str();
  }
  const encore::UnitStats& st = j.stats;
  if (st.items_pruned != static_cast<size_t>(std::count(expect.begin(), expect.end(), true))) return "stats.items_pruned disagrees with one_time()";
  if (!plan && st.planned_temps != 0) return "planning off, yet temps were planned";
  if (plan) {
    if (!(st.temp_bytes_lower_bound <= st.temp_bytes_planned && st.temp_bytes_planned <= st.temp_bytes_naive)) {
      s << "planner figures out of order: lower bound " << st.temp_bytes_lower_bound << ", planned " << st.temp_bytes_planned << ", naive "
        << st.temp_bytes_naive;
      return s.str();
    }
    if (st.temp_bytes_lower_bound > 0) {
      double r = static_cast<double>(st.temp_bytes_planned) / static_cast<double>(st.temp_bytes_lower_bound);
      if (c && r > c->worst_ratio) c->worst_ratio = r, c->worst_ratio_seed = p.seed;
      if (r > 1.10 + 1e-12) {
        if (c) ++c->ratio_over;
        std::fprintf(stderr, "[property] seed %llu: planned %llu bytes > 1.10 x lower bound %llu\n", static_cast<unsigned long long>(p.seed),
                     static_cast<unsigned long long>(st.temp_bytes_planned), static_cast<unsigned long long>(st.temp_bytes_lower_bound));
      }
    }
  }
  return {};
}

struct SeedOutcome {
  std::string failure;
  bool replay_mismatch = false;  // eager != jit (what the mutation tests look for)
  bool plan_check_threw = false;
};

// Every fourth seed generates a bigger step.
prop::GenOptions gen_options(uint64_t seed, int devices = 1) {
  prop::GenOptions o;
  o.devices = devices;
  static const int align = prop::view_align(cl_device());  // view offsets the OpenCL device accepts
  o.view_align = align;
  if (seed % 4 == 3) o.min_ops = 16, o.max_ops = 32;
  return o;
}

// Everything for one seed on the OpenCL device, or spread over two devices (then the values of the
// generated step live on either device).
SeedOutcome run_seed(uint64_t seed, const std::vector<encore::Device>& dev, std::vector<std::pair<bool, bool>> configs, Counts* c,
                     bool structure = true, bool foreign = false) {
  SeedOutcome out;
  Prog p = prop::generate(seed, gen_options(seed, static_cast<int>(dev.size())));
  std::vector<prop::RefItem> items = prop::reference_items(p);
  std::vector<bool> ref_one = prop::reference_one_time(items);
  RunResult h = prop::run_host(p);
  RunResult e = prop::run_device(p, dev, nullptr, foreign);
  if (std::string d = prop::compare(p, h, e, "host", "eager"); !d.empty()) {
    out.failure = "eager differs from the host reference: " + d;
    return out;
  }
  for (auto [prune, plan] : configs) {
    encore::JitOptions o = jit_options(prune, plan);
    RunResult j = prop::run_device(p, dev, &o, foreign);
    std::string cfg = std::string(" [prune ") + (prune ? "on" : "off") + ", plan " + (plan ? "on" : "off") + "]";
    if (!j.error.empty()) {
      out.plan_check_threw = j.error.find("invalid memory plan") != std::string::npos;
      out.failure = "jit threw" + cfg + ": " + j.error;
      return out;
    }
    if (std::string d = prop::compare(p, e, j, "eager", "replay"); !d.empty()) {
      out.replay_mismatch = true;
      out.failure = "jit differs from eager" + cfg + ": " + d;
      return out;
    }
    if (structure)
      if (std::string d = check_structure(p, items, ref_one, j, prune, plan, c); !d.empty()) {
        out.failure = "structure" + cfg + ": " + d;
        return out;
      }
    if (c) {
      ++c->configs_run;
      if (prune && plan) {
        c->items += j.unit_items;
        c->pruned_items += j.stats.items_pruned;
        c->planned_temps += j.stats.planned_temps;
        c->pruned_seeds += j.stats.items_pruned > 0;
        c->arena_reuse += j.stats.temp_bytes_planned < j.stats.temp_bytes_naive;
      }
    }
  }
  if (c) {
    ++c->seeds;
    c->loop_carried += prop::has_loop_carried(p, items);
    bool in_written = false;
    for (const auto& it : items)
      for (const auto& a : it.acc) in_written = in_written || (a.write && a.storage < static_cast<int>(p.input_vals.size()));
    c->input_written += in_written;
    c->host_update_replay += p.f.host_update_replay;
    // a host update in the replay phase of a closure buffer that a one-time item reads or writes
    bool hit = false;
    for (const prop::HostEvent& ev : p.events) {
      if (ev.before_call < 2) continue;
      int storage = static_cast<int>(p.input_vals.size()) + ev.state;
      for (size_t i = 0; i < items.size(); ++i)
        if (ref_one[i])
          for (const auto& a : items[i].acc) hit = hit || a.storage == storage;
    }
    c->host_update_hits_one_time += hit;
    // the host scribbles on a returned buffer that a one-time item wrote: it must be rewritten
    bool edit_hit = false;
    if (!p.edit_after.empty())
      for (const prop::RefItem& it : items)
        for (const auto& a : it.acc)
          for (int o : p.outputs) {
            const Value& v = p.values[static_cast<size_t>(o)];
            int root = v.src == Value::view ? v.base : o;
            int storage = static_cast<int>(p.input_vals.size() + p.state_vals.size()) + root;
            edit_hit = edit_hit || (a.write && a.storage == storage && ref_one[static_cast<size_t>(&it - items.data())]);
          }
    c->edit_hits_one_time += edit_hit;
    c->var_size += p.f.var_size;
    c->var_scalar += p.f.var_scalar;
    c->counter += p.f.counter;
    c->rng += p.f.rng;
    c->cycle += p.f.cycle;
    c->table += p.f.table;
    c->late_table += p.f.table_late_state;
    c->views += p.f.view;
    c->copies += p.f.copy;
    c->cross_copies += p.f.cross_copy;
    c->uploads += p.f.upload;
    c->fills += p.f.fill;
    c->edit_output += p.f.edit_output;
    c->feedback += p.f.feedback;
    c->ring += p.ring_inputs;
    c->freed += p.free_after >= 0;
    c->dup += p.dup_input;
  }
  return out;
}

void report_failure(uint64_t seed, const std::string& why, int* shown, int devices = 1, const char* filter = "Property.*") {
  if ((*shown)++ < 5) {
    Prog p = prop::generate(seed, gen_options(seed, devices));
    ADD_FAILURE() << "seed " << seed << ": " << why << "\n" << repro(seed, filter) << "\n" << p.describe();
  } else {
    ADD_FAILURE() << "seed " << seed << ": " << why << "\n" << repro(seed, filter);
  }
}

// ---- the property run ---------------------------------------------------------------------------

TEST(Property, EagerEqualsReplayAndHostReference) {
  encore::Device dev = cl_device();
  if (!dev) GTEST_SKIP() << "no OpenCL device";
  auto t0 = std::chrono::steady_clock::now();
  std::vector<uint64_t> ss = seeds(600);
  Counts c;
  int shown = 0;
  for (uint64_t seed : ss) {
    // every seed: prune and plan on; one other combination, rotating over the seeds
    // every seed with pruning and planning each on and off
    std::vector<std::pair<bool, bool>> configs = {{true, true}, {false, true}, {true, false}, {false, false}};
    SeedOutcome o = run_seed(seed, {dev}, configs, &c);
    if (!o.failure.empty()) report_failure(seed, o.failure, &shown);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "[property] %d seeds (%d jit runs) in %.1f s on %s\n"
      "[property] items %zu, pruned %zu in %d seeds, planned temps %zu, arena reuse in %d seeds; worst planned/lower bound %.4f (seed %llu)\n"
      "[property] loop-carried %d, host updates in replay %d (hitting one-time items %d), input written %d, variable sizes %d, variable "
      "scalars %d,\n[property] counters %d, rng %d, state cycles %d, const tables %d, late tables into state %d, views %d, copies %d, uploads %d, "
      "fills %d, output edits %d\n",
      c.seeds, c.configs_run, secs, dev.info().name.c_str(), c.items, c.pruned_items, c.pruned_seeds, c.planned_temps, c.arena_reuse,
      c.worst_ratio, static_cast<unsigned long long>(c.worst_ratio_seed), c.loop_carried, c.host_update_replay, c.host_update_hits_one_time,
      c.input_written, c.var_size, c.var_scalar, c.counter, c.rng, c.cycle, c.table, c.late_table, c.views, c.copies, c.uploads,
      c.fills, c.edit_output);
  std::printf("[property] last output fed back as input %d, ring-view inputs %d, free_intermediates %d, one buffer in two input slots %d,\n"
              "[property] returned buffers written by one-time items edited by the host %d\n", c.feedback, c.ring, c.freed, c.dup, c.edit_hits_one_time);
  EXPECT_EQ(c.ratio_over, 0) << "planned > 1.10 x lower bound (seeds printed above)";
  if (single_seed() || ss.size() < 100) return;
  // the generator must actually exercise what the rules are about
  const int want = static_cast<int>(ss.size()) / 10;
  const std::pair<const char*, int> seen[] = {
      {"arena_reuse", c.arena_reuse}, {"pruned_seeds", c.pruned_seeds}, {"loop_carried", c.loop_carried},
      {"host_update_replay", c.host_update_replay}, {"host_update_hits_one_time", c.host_update_hits_one_time},
      {"input_written", c.input_written}, {"var_size", c.var_size}, {"var_scalar", c.var_scalar}, {"fills", c.fills},
      {"counter", c.counter}, {"rng", c.rng}, {"cycle", c.cycle}, {"late_table", c.late_table}};
  for (const auto& [what, seeds] : seen) EXPECT_GE(seeds, want) << what << ": seeds that exercise it";
  EXPECT_GE(c.feedback, want / 2);
  EXPECT_GE(c.edit_hits_one_time, 1);
  EXPECT_LE(c.worst_ratio, 1.10);
}

// The same property with the kernels built without `const`, as code written for plain OpenCL often
// is: every read-only parameter's access then comes from the reader's inference (and is checked on
// the data at capture), so the one-time set and the results must come out exactly as
// with const (the structure check compares the one-time set with the reference's, which reads the
// const kernels). 300 seeds, prune and plan on, and one other combination in turn.
TEST(Property, ForeignKernelsWithoutConstEqualEagerAndHost) {
  encore::Device dev = cl_device();
  if (!dev) GTEST_SKIP() << "no OpenCL device";
  // the mode does what it says: no const left, and the reader infers the read-only parameters
  const std::string src = prop::foreign_source();
  ASSERT_EQ(src.find("const"), std::string::npos);
  const encore::Kernel add = dev.compile(src).kernel("p_add");
  ASSERT_EQ(add.params()[0].inferred_access, encore::Access::in);
  ASSERT_FALSE(add.params()[0].read_only());
  std::vector<uint64_t> ss = seeds(300);
  Counts c;
  int shown = 0;
  const std::pair<bool, bool> others[] = {{false, true}, {true, false}, {false, false}};
  for (uint64_t seed : ss) {
    SeedOutcome o = run_seed(seed, {dev}, {{true, true}, others[seed % 3]}, &c, true, true);
    if (!o.failure.empty()) report_failure(seed, o.failure, &shown, 1, "Property.Foreign*");
  }
  std::printf("[property/foreign] %d seeds (%d jit runs): items %zu, pruned %zu in %d seeds\n", c.seeds, c.configs_run, c.items, c.pruned_items,
              c.pruned_seeds);
  if (!single_seed() && ss.size() >= 100) {
    EXPECT_GE(c.pruned_seeds, static_cast<int>(ss.size()) / 10);
  }
}

// The same property with the step's values spread over two devices (ENCORE_TEST_DEVICE_SPLIT=pair:
// two devices of one platform; =sub: two sub-devices of one device; see device_pair.hpp). Kernels
// run on the device of their buffers and data moves between the devices by cross-device copies,
// items like any other. Eager, replay and the host agree bit for bit: a copy that ran before the
// write it reads on the other device, or a write that overtook a copy still reading its bytes on
// the other queue, changes bytes here (removing either wait from the peer copy (src/opencl/cl_commands.cpp) fails seeds
// within the first 20). Default 1200 seeds, ~15 s on PoCL on 2 cores (debugoptimized).
TEST(Property, TwoDevicesEagerEqualsReplayAndHostReference) {
  if (!encore_test::have_cl()) GTEST_SKIP() << "no OpenCL device";
  const encore_test::DevicePair& pair = encore_test::device_pair();
  if (!pair.error.empty()) FAIL() << pair.error;
  if (pair.devs.empty()) GTEST_SKIP() << pair.skip;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<uint64_t> ss = seeds(1200);
  Counts c;
  int shown = 0;
  const std::pair<bool, bool> others[] = {{false, true}, {true, false}, {false, false}};
  for (uint64_t seed : ss) {
    // every seed with pruning and planning on, and one other combination, rotating over the seeds
    SeedOutcome o = run_seed(seed, pair.devs, {{true, true}, others[seed % 3]}, &c);
    if (!o.failure.empty()) report_failure(seed, o.failure, &shown, 2, "Property.TwoDevices*");
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[property/two devices] %d seeds (%d jit runs) in %.1f s on %s\n"
              "[property/two devices] cross-device copies in %d seeds; items %zu, pruned %zu, planned temps %zu, arena reuse in %d seeds\n",
              c.seeds, c.configs_run, secs, pair.how.c_str(), c.cross_copies, c.items, c.pruned_items, c.planned_temps, c.arena_reuse);
  EXPECT_EQ(c.ratio_over, 0) << "planned > 1.10 x lower bound (seeds printed above)";
  if (single_seed() || ss.size() < 50) return;
  EXPECT_GE(c.cross_copies, static_cast<int>(ss.size()) * 3 / 4) << "the generator must move data between the devices";
  EXPECT_GE(c.pruned_seeds, static_cast<int>(ss.size()) / 10);
  EXPECT_GE(c.arena_reuse, static_cast<int>(ss.size()) / 10);
}

// Structure only (one-time set vs the reference fixpoint, planner figures) on NULL devices, where
// kernels do nothing: many more seeds, and bigger steps (8..40 ops), cheaply. Generator seeds are
// seed + `base`; `devs.size()` devices spread the values.
Counts structure_on_null(const std::vector<encore::Device>& devs, uint64_t base, int dflt, const char* filter) {
  const int ndev = static_cast<int>(devs.size());
  std::vector<uint64_t> ss = seeds(dflt);
  int shown = 0;
  Counts c;
  for (uint64_t seed : ss) {
    Prog p = prop::generate(seed + base, {8, 40, true, ndev, prop::view_align(devs[0])});
    std::vector<prop::RefItem> items = prop::reference_items(p);
    std::vector<bool> ref_one = prop::reference_one_time(items);
    for (auto [prune, plan] : {std::pair{true, true}, std::pair{false, false}}) {
      encore::JitOptions o = jit_options(prune, plan);
      RunResult j = prop::run_device(p, devs, &o);
      if (std::string d = check_structure(p, items, ref_one, j, prune, plan, &c); !d.empty()) {
        if (shown++ < 5)
          ADD_FAILURE() << "NULL seed " << seed << " (generator seed " << seed + base << ", ops 8..40, " << ndev << " device(s)): " << d << "\n"
                        << repro(seed, filter) << "\n" << p.describe();
        break;
      }
    }
  }
  c.seeds = static_cast<int>(ss.size());
  EXPECT_EQ(c.ratio_over, 0) << "planned > 1.10 x lower bound (seeds printed above)";
  return c;
}

TEST(Property, StructureOnNullDevice) {
  Counts c = structure_on_null({encore::Device::open("NULL")}, 1000000, 1500, "Property.StructureOnNullDevice");
  std::printf("[property/NULL] %d seeds (8..40 ops): worst planned/lower bound %.4f (generator seed %llu)\n", c.seeds, c.worst_ratio,
              static_cast<unsigned long long>(c.worst_ratio_seed));
}

// The same over two NULL devices (Device::split of NULL): steps spread over two devices.
TEST(Property, TwoDevicesStructureOnNullDevices) {
  Counts c = structure_on_null(encore::Device::open("NULL").split(2), 2000000, 600, "Property.TwoDevicesStructure*");
  std::printf("[property/two NULL devices] %d seeds (8..40 ops): worst planned/lower bound %.4f (generator seed %llu)\n", c.seeds,
              c.worst_ratio, static_cast<unsigned long long>(c.worst_ratio_seed));
}

// `a + b` re-runs pruning and planning over the concatenation: two explicit captures of the step
// (calls 0 and 1) concatenated, replayed for calls 2+3 and 4+5; results as the host reference, and
// the one-time set as the reference fixpoint over the step twice in a row.
TEST(Property, ConcatenatedCapturesEqualHostReference) {
  encore::Device dev = cl_device();
  if (!dev) GTEST_SKIP() << "no OpenCL device";
  std::vector<uint64_t> ss = seeds(200);
  int shown = 0, run = 0, pruned_more = 0;
  for (uint64_t seed : ss) {
    Prog p = prop::generate(seed, gen_options(seed));
    if (p.has_sv || p.has_len || p.has_fv) continue;  // one unit binds one value per variable per run
    Prog q = prop::pair_program(p);
    RunResult h = prop::run_host(q);
    std::vector<bool> ref = prop::reference_one_time(prop::reference_items(prop::doubled(q)));
    for (bool prune : {true, false}) {
      encore::UnitOptions o;
      o.prune = prune;
      o.plan = true;
      RunResult u = prop::run_device_concat(q, dev, o);
      std::string d = prop::compare(q, h, u, "host", "concatenation");
      if (d.empty() && u.one_time != (prune ? ref : std::vector<bool>(ref.size(), false)))
        d = "one-time set of the concatenation: engine " + bits(u.one_time) + ", reference fixpoint " + bits(ref);
      if (d.empty() && !(u.stats.temp_bytes_lower_bound <= u.stats.temp_bytes_planned && u.stats.temp_bytes_planned <= u.stats.temp_bytes_naive))
        d = "planner figures out of order";
      if (!d.empty()) {
        if (shown++ < 5) ADD_FAILURE() << "seed " << seed << " [a + b, prune " << prune << "]: " << d << "\n" << repro(seed) << "\n" << q.describe();
        break;
      }
      if (prune) {
        ++run;
        // items one-time in the single step but not in the pair (the second copy writes them again)
        std::vector<bool> single = prop::reference_one_time(prop::reference_items(q));
        for (size_t i = 0; i < single.size(); ++i) pruned_more += single[i] && !ref[i];
      }
    }
  }
  std::printf("[property a+b] %d seeds; %d items one-time in one step but not in the concatenation\n", run, pruned_more);
  if (!single_seed() && ss.size() >= 100) {
    EXPECT_GE(run, static_cast<int>(ss.size()) / 5);
  }
}

// ---- hand-built graphs with exact one-time sets ---------------------------------------------------

struct Builder {
  Prog p;
  explicit Builder(int n = 72) {
    p.N = n;
    p.M = n - 32;
  }
  int input(int count = -1) {
    Value v;
    v.src = Value::input;
    v.index = static_cast<int>(p.input_vals.size());
    v.count = count < 0 ? p.N : count;
    p.values.push_back(v);
    p.input_vals.push_back(static_cast<int>(p.values.size()) - 1);
    return p.input_vals.back();
  }
  int state(Ty ty = Ty::f32, int count = -1) {
    Value v;
    v.src = Value::state;
    v.index = static_cast<int>(p.state_vals.size());
    v.count = count < 0 ? p.N : count;
    v.ty = ty;
    p.values.push_back(v);
    p.state_vals.push_back(static_cast<int>(p.values.size()) - 1);
    prop::Words w(static_cast<size_t>(v.count));
    for (size_t i = 0; i < w.size(); ++i) {
      float f = static_cast<float>(static_cast<int>((i * 7 + p.state_vals.size() * 13) % 29) - 14) / 8.0f;
      uint32_t x;
      std::memcpy(&x, &f, 4);
      w[i] = ty == Ty::f32 ? x : ty == Ty::u32 ? static_cast<uint32_t>(i * 2654435761u + 17u) : 3u;
    }
    p.state_init.push_back(w);
    return p.state_vals.back();
  }
  int temp(int count = -1) { return p.add_temp(count < 0 ? p.N : count); }
  int view(int base, int off, int count) { return p.add_view(base, off, count); }
  void k(KId k, std::vector<int> bufs, std::vector<encore::Access> acc = {}, float f0 = 0.5f, float f1 = 0.25f) {
    Op op = kernel_op(k, std::move(bufs), std::move(acc), f0, f1);
    op.gsize = k == KId::counter ? 1 : p.values[static_cast<size_t>(op.bufs.back())].count;
    if (k == KId::inplace || k == KId::vprefix || k == KId::rng) op.gsize = p.values[static_cast<size_t>(op.bufs[0])].count;
    op.var_scalar = k == KId::var_add || k == KId::var_scale;
    p.has_fv = p.has_fv || k == KId::var_scale;
    op.var_size = k == KId::vprefix;
    p.has_sv = p.has_sv || k == KId::var_add;
    p.has_len = p.has_len || op.var_size;
    p.ops.push_back(op);
  }
  void upload(int v) {
    Op op;
    op.kind = Op::upload;
    op.v = v;
    for (int i = 0; i < p.values[static_cast<size_t>(v)].count; ++i) op.data.push_back(0x3f800000u + static_cast<uint32_t>(i) * 4096u);
    p.ops.push_back(op);
  }
  void host_update(int state_value, int before_call) {
    int s = p.values[static_cast<size_t>(state_value)].index;
    prop::Words w = p.state_init[static_cast<size_t>(s)];
    for (auto& x : w) x ^= 0x00400000u;  // another finite float
    p.events.push_back({before_call, s, w});
  }
  Prog done(std::vector<int> outputs) {
    p.outputs = std::move(outputs);
    p.len_hi = p.M;
    p.input_sets.resize(prop::kSets);
    for (int s = 0; s < prop::kSets; ++s)
      for (int v : p.input_vals) {
        prop::Words w(static_cast<size_t>(p.values[static_cast<size_t>(v)].count));
        for (size_t i = 0; i < w.size(); ++i) {
          float f = static_cast<float>(static_cast<int>((i * 5 + static_cast<size_t>(s) * 11) % 23) - 11) / 4.0f;
          std::memcpy(&w[i], &f, 4);
        }
        p.input_sets[static_cast<size_t>(s)].push_back(w);
      }
    for (int c = 0; c < prop::kCalls; ++c) {
      p.var_vals.push_back({c - 3, 1 + (c * 7) % p.M});
      p.fv_vals.push_back(0.25f * static_cast<float>(c) - 0.5f);
    }
    return p;
  }
};

// Checks a hand-built step: exact one-time set from the engine and from the reference fixpoint, and
// eager == replay == host for every pruning/planning combination.
void expect_one_time(const Prog& p, const std::string& expect) {
  SCOPED_TRACE(p.describe());
  std::vector<bool> ref = prop::reference_one_time(prop::reference_items(p));
  EXPECT_EQ(bits(ref), expect) << "reference fixpoint";
  encore::Device dev = cl_device();
  if (!dev) dev = encore::Device::open("NULL");
  RunResult h = prop::run_host(p);
  RunResult e = prop::run_device(p, dev, nullptr);
  if (!dev.is_null()) {
    EXPECT_EQ(prop::compare(p, h, e, "host", "eager"), "");
  }
  for (auto [prune, plan] : {std::pair{true, true}, std::pair{true, false}, std::pair{false, true}, std::pair{false, false}}) {
    encore::JitOptions o = jit_options(prune, plan);
    RunResult j = prop::run_device(p, dev, &o);
    ASSERT_EQ(j.error, "");
    if (prune) {
      EXPECT_EQ(bits(j.one_time), expect) << "engine one_time()";
    } else {
      EXPECT_EQ(bits(j.one_time), std::string(expect.size(), '0'));
    }
    if (!dev.is_null()) {
      EXPECT_EQ(prop::compare(p, e, j, "eager", "replay"), "") << "prune " << prune << " plan " << plan;
    }
  }
}

TEST(PropertyOneTime, ConstantTableIsPruned) {
  Builder b;
  int x = b.input(), w = b.state(), t = b.temp(), o = b.temp();
  b.k(KId::table, {w, t}, {encore::Access::in, encore::Access::out});
  b.k(KId::add, {t, x, o});
  b.host_update(w, 3);  // the pruned table must be rebuilt before replay 3
  expect_one_time(b.done({o}), "10");
}

TEST(PropertyOneTime, ChainOfTablesAndUploadArePruned) {
  Builder b;
  int x = b.input(), w = b.state(), t = b.temp(), t2 = b.temp(), u = b.temp(), o = b.temp(), o2 = b.temp();
  b.k(KId::table, {w, t});  // t fresh: its first access is a pure write even though inout
  b.k(KId::affine, {t, t2}, {encore::Access::none, encore::Access::out});
  b.upload(u);
  b.k(KId::tern, {t2, u, x, o});
  b.k(KId::add, {t2, u, o2});  // reads only one-time results: one-time too
  b.host_update(w, 4);
  expect_one_time(b.done({o, o2}), "11101");
}

TEST(PropertyOneTime, RngAdvanceIsNotPruned) {
  Builder b;
  int r = b.state(Ty::u32), o = b.temp(), o2 = b.temp();
  b.k(KId::rng, {r, o});
  b.k(KId::affine, {o, o2});
  expect_one_time(b.done({o2}), "00");
}

TEST(PropertyOneTime, CounterIsNotPruned) {
  Builder b;
  int c = b.state(Ty::i32, 1), w = b.state(), o = b.temp();
  b.k(KId::counter, {c});
  b.k(KId::from_counter, {w, c, o});
  expect_one_time(b.done({o}), "00");
}

TEST(PropertyOneTime, StateCycleIsNotPruned) {
  Builder b;
  int a = b.state(), s = b.state(), o = b.temp();
  b.k(KId::affine, {a, s}, {encore::Access::in, encore::Access::out});
  b.k(KId::affine, {s, a}, {encore::Access::in, encore::Access::out}, -0.5f, 0.125f);
  b.k(KId::affine, {s, o}, {encore::Access::in, encore::Access::out});
  expect_one_time(b.done({o}), "000");
}

TEST(PropertyOneTime, ItemTouchingAnInputIsNotPruned) {
  Builder b;
  int x = b.input(), w = b.state(), o = b.temp(), o2 = b.temp();
  b.k(KId::affine, {x, o});
  b.k(KId::inplace, {x, w});  // writes the input
  b.k(KId::affine, {w, o2});  // closure only: one-time
  expect_one_time(b.done({o, o2}), "001");
}

TEST(PropertyOneTime, ItemUsingAVariableIsNotPruned) {
  Builder b;
  int w = b.state(), s = b.state(), o = b.temp(), o2 = b.temp();
  b.k(KId::var_add, {w, o});   // variable scalar
  b.k(KId::vprefix, {s, w});   // variable global size (and a read-modify-write)
  int o3 = b.temp();
  b.k(KId::affine, {o, o2});     // reads a variable item's output
  b.k(KId::var_scale, {w, o3});  // float variable scalar
  expect_one_time(b.done({o, o2, o3}), "0000");
}

TEST(PropertyOneTime, TwoWritersOfOneBufferAreNotPruned) {
  Builder b;
  int w = b.state(), w2 = b.state(), s = b.state(), o = b.temp();
  b.k(KId::affine, {w, s}, {encore::Access::in, encore::Access::out});
  b.k(KId::affine, {w2, s}, {encore::Access::in, encore::Access::out});
  b.k(KId::affine, {s, o}, {encore::Access::in, encore::Access::out});
  expect_one_time(b.done({o}), "000");
}

TEST(PropertyOneTime, WritersOfDisjointViewsArePruned) {
  Builder b(64);  // views [0, 32) and [32, 64) of one closure buffer
  int w = b.state(Ty::f32, 32), w2 = b.state(Ty::f32, 32), s = b.state(Ty::f32, 64), x = b.input(64), o = b.temp(64);
  int lo = b.view(s, 0, 32), hi = b.view(s, 32, 32);
  b.k(KId::table, {w, lo}, {encore::Access::in, encore::Access::out});
  b.k(KId::table, {w2, hi}, {encore::Access::in, encore::Access::out});
  b.k(KId::add, {s, x, o});
  b.host_update(w2, 4);
  expect_one_time(b.done({o}), "110");
}

TEST(PropertyOneTime, InoutWriteOfClosureBufferIsNotPruned) {
  Builder b;
  int w = b.state(), s = b.state(), o = b.temp();
  b.k(KId::table, {w, s});  // default access inout on existing storage: a read-modify-write
  b.k(KId::affine, {s, o});
  expect_one_time(b.done({o}), "00");
}

// A closure buffer read early in the step and rebuilt late from another closure buffer: the rebuild
// is one-time by the rule; after a host update the re-run must not be visible to the earlier reader
// before eager execution would have run it (the earlier reader sees last call's table).
TEST(PropertyOneTime, LateRebuildOfClosureTableAfterHostUpdate) {
  Builder b;
  int x = b.input(), w = b.state(), ts = b.state(), o = b.temp();
  b.k(KId::add, {ts, x, o});
  b.k(KId::table, {w, ts}, {encore::Access::in, encore::Access::out});
  b.host_update(w, 3);
  b.host_update(w, 5);
  expect_one_time(b.done({o}), "01");
}

// Another unit's replay writes a closure buffer that this unit's one-time item reads: the write bumps
// the version, so the table is rebuilt before the next replay.
TEST(PropertyOneTime, AnotherUnitsReplayReRunsOneTimeItems) {
  encore::Device dev = cl_device();
  if (!dev) GTEST_SKIP() << "no OpenCL device";
  encore::Program prog = dev.compile(R"CL(
    __kernel void bump(__global float* s, __global const float* x) { size_t i = get_global_id(0); s[i] = s[i] * 0.5f + x[i]; }
    __kernel void tab(__global const float* s, __global float* t) { size_t i = get_global_id(0); t[i] = s[i] * 2.0f + 1.0f; }
    __kernel void use(__global const float* t, __global const float* x, __global float* o) { size_t i = get_global_id(0); o[i] = t[i] + x[i]; }
  )CL");
  encore::Kernel bump = prog.kernel("bump"), tab = prog.kernel("tab"), use = prog.kernel("use");
  const size_t n = 72;
  auto run = [&](bool jit) {
    encore::Buffer s = dev.alloc<float>(n);
    std::vector<float> init(n);
    for (size_t i = 0; i < n; ++i) init[i] = static_cast<float>(i % 9) - 4.0f;
    s.copyin(init);
    std::vector<encore::Buffer> xs;
    for (int k = 0; k < 3; ++k) {
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 3 + static_cast<size_t>(k)) % 7) * 0.25f;
      xs.push_back(dev.alloc<float>(n));
      xs.back().copyin(v);
    }
    auto fa = [&](encore::Buffer x) { dev.launch(bump, {n}, {}, s, x); };
    auto fb = [&](encore::Buffer x) {
      encore::Buffer t = dev.alloc<float>(n), o = dev.alloc<float>(n);
      dev.launch(tab, {n}, {}, s, encore::out(t));
      dev.launch(use, {n}, {}, t, x, o);
      return o;
    };
    encore::TinyJit ja(fa, jit_options(true, true));
    encore::TinyJit jb(fb, jit_options(true, true));
    std::vector<std::vector<float>> got;
    for (int c = 0; c < 6; ++c) {
      const encore::Buffer& x = xs[static_cast<size_t>(c % 3)];
      if (c % 2) {  // the other unit writes s on odd calls only
        if (jit) ja(x);
        else fa(x);
      }
      got.push_back((jit ? jb(x) : fb(x)).copyout<float>());
    }
    if (jit) {
      EXPECT_EQ(bits(jb.unit().one_time()), "10");
    }
    return got;
  };
  EXPECT_EQ(run(false), run(true));
}

// ---- mutation tests: each breakage must be detected -----------------------------------------------

struct MutationResult {
  int seeds = 0, mismatches = 0, checker = 0;
  uint64_t first = 0;
};

MutationResult run_mutation(bool& flag, int max_seeds, int enough) {
  encore::Device dev = cl_device();
  MutationResult m;
  struct Restore {
    bool& f;
    ~Restore() { f = false; }
  } restore{flag};
  flag = true;
  for (uint64_t seed = 0; seed < static_cast<uint64_t>(max_seeds) && m.mismatches + m.checker < enough; ++seed) {
    SeedOutcome o = run_seed(seed, {dev}, {{true, true}}, nullptr, false);
    ++m.seeds;
    if (o.replay_mismatch) {
      if (m.mismatches + m.checker == 0) m.first = seed;
      ++m.mismatches;
    } else if (o.plan_check_threw) {
      if (m.mismatches + m.checker == 0) m.first = seed;
      ++m.checker;
    }
  }
  return m;
}

// The seed a mutation broke passes again with every switch off: the mismatch came from the
// mutation, not from the seed.
void expect_seed_passes_unmutated(const MutationResult& m) {
  if (m.mismatches + m.checker == 0) return;
  SeedOutcome o = run_seed(m.first, {cl_device()}, {{true, true}}, nullptr, false);
  EXPECT_FALSE(o.replay_mismatch) << "seed " << m.first << " mismatches without the mutation";
  EXPECT_FALSE(o.plan_check_threw) << "seed " << m.first;
}

// The mutation behind `flag` over up to 150 seeds (stopping at 5 caught), its count printed and its
// first caught seed run again unmutated.
MutationResult mutation_run(const char* name, bool& flag) {
  MutationResult m = run_mutation(flag, 150, 5);
  expect_seed_passes_unmutated(m);
  std::printf("[mutation %s] %d seeds with mismatching bytes, %d caught by the engine's own plan check, of %d (first %llu)\n", name,
              m.mismatches, m.checker, m.seeds, static_cast<unsigned long long>(m.first));
  return m;
}

TEST(PropertyMutation, PruneLikeTinygradIsDetected) {
  if (!cl_device()) GTEST_SKIP() << "no OpenCL device";
  MutationResult m = mutation_run("prune_like_tinygrad", encore::testing::prune_like_tinygrad);
  EXPECT_GE(m.mismatches, 1) << "tinygrad's pruning rule froze nothing the property run could see";
}

TEST(PropertyMutation, IgnoredVersionsAreDetected) {
  if (!cl_device()) GTEST_SKIP() << "no OpenCL device";
  MutationResult m = mutation_run("ignore_versions", encore::testing::ignore_versions);
  EXPECT_GE(m.mismatches, 1) << "a version check that ignores writes went unnoticed";
}

TEST(PropertyMutation, BrokenPlannerIsDetected) {
  if (!cl_device()) GTEST_SKIP() << "no OpenCL device";
  MutationResult m = mutation_run("break_planner", encore::testing::break_planner);
  // Debug builds verify every plan in make_unit (check_plan) and throw before replay; release builds
  // (NDEBUG) replay the broken plan and the byte comparison must catch the collision.
#ifdef NDEBUG
  EXPECT_GE(m.mismatches, 1) << "overlapping temps shared bytes and no output changed";
#else
  EXPECT_GE(m.mismatches + m.checker, 1);
#endif
}

// ---- concurrent replay (src/unit/concurrent.cpp) ---------------------------------------------------

// Concurrent replay forced on for every step that can have it (one chain too), and optionally its
// items run in the order their dependencies allow that strays farthest from the step's (test
// switches; see src/testing.hpp). Restored when the run ends.
struct ForcedConcurrency {
  explicit ForcedConcurrency(bool reorder) {
    encore::testing::force_concurrent = true;
    encore::testing::concurrent_reorder = reorder;
  }
  ~ForcedConcurrency() { encore::testing::force_concurrent = encore::testing::concurrent_reorder = false; }
};

void concurrent_property(bool reorder, const char* filter, bool foreign = false) {
  encore::Device dev = cl_device();
  if (!dev) GTEST_SKIP() << "no OpenCL device";
  if (dev.impl()->open_lanes(2) < 2) GTEST_SKIP() << "the device has no second queue";
  ForcedConcurrency on(reorder);
  const uint64_t binds0 = encore::testing::concurrent_binds.load();
  std::vector<uint64_t> ss = seeds(300);
  int shown = 0;
  for (uint64_t seed : ss) {
    SeedOutcome o = run_seed(seed, {dev}, {{true, true}, {false, false}}, nullptr, false, foreign);
    if (!o.failure.empty()) report_failure(seed, o.failure, &shown, 1, filter);
  }
  const uint64_t binds = encore::testing::concurrent_binds.load() - binds0;
  std::printf("[property concurrent%s%s] %zu seeds, %llu binds replaying concurrently\n", reorder ? ", reordered" : "", foreign ? ", without const" : "", ss.size(),
              static_cast<unsigned long long>(binds));
  // most generated steps have only kernels, fills and copies on one device (uploads keep the
  // in-order path): a good share of the seeds must have run concurrently
  if (!single_seed() && ss.size() >= 100) {
    EXPECT_GE(binds, ss.size() / 4);
  }
}

// On the device's lanes, each item waiting only for its dependencies on other lanes.
TEST(Property, ConcurrentReplayEqualsEager) { concurrent_property(false, "Property.ConcurrentReplayEqualsEager"); }

// Deterministic: any order the lanes allow gives the step's results (how the lanes interleave is
// the device's choice; this one is the most distant from the step's).
TEST(Property, ReorderedConcurrentReplayEqualsEager) { concurrent_property(true, "Property.ReorderedConcurrentReplayEqualsEager"); }

// The same with the kernels built without const: the dependencies between items come from the
// reader's inferred access (an inferred in that is wrong would let a reader run beside its writer).
TEST(Property, ReorderedConcurrentForeignEqualsEager) {
  concurrent_property(true, "Property.ReorderedConcurrentForeignEqualsEager", true);
}

// Dropping one dependency edge (the last item that has one loses its first) under the reordered
// replay changes bytes on some seed: the property run sees a missing edge.
TEST(PropertyMutation, DroppedDependencyIsDetected) {
  if (!cl_device()) GTEST_SKIP() << "no OpenCL device";
  if (cl_device().impl()->open_lanes(2) < 2) GTEST_SKIP() << "the device has no second queue";
  ForcedConcurrency on(true);
  MutationResult m = mutation_run("drop_dependency", encore::testing::drop_dependency);
  EXPECT_GE(m.mismatches, 1) << "a dependency edge was dropped and no output changed";
}

}  // namespace
