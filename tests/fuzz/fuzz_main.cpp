// encore-fuzz: a time-boxed mutation fuzzer of the three parsers that read untrusted text: the
// kernel reader (preprocessor, signatures, struct layouts), the workload parser and size
// expressions. Inputs are mutations of a corpus kept in the repository (tests/fuzz/corpus/MODE):
// byte flips, cuts, repeats, splices between entries, tokens from the mode's dictionary, boundary
// numbers. Every input must either be read or refused with an encore::Error, within a time bound;
// any other exception, a crash or a slow input fails the run and prints the input. Not coverage
// guided (g++ has no libFuzzer): CI runs it under ASan+UBSan, where a memory error is a report.
//   encore-fuzz reader tests/fuzz/corpus/reader 50 [seed]
#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/signature_parser.hpp"
#include "encore/error.hpp"
#include "encore/variable.hpp"
#include "encore/workload.hpp"

namespace {

std::string current;  // the input being read, printed when it crashes

void on_fatal(int sig) {
  static const char head[] = "\nencore-fuzz: fatal signal; the input was:\n";
  (void)!write(2, head, sizeof head - 1);
  (void)!write(2, current.data(), current.size());
  (void)!write(2, "\n", 1);
  signal(sig, SIG_DFL);
  raise(sig);
}

const std::vector<std::string> kReaderWords = {
    "#if ", "#ifdef ", "#ifndef ", "#elif ", "#else\n", "#endif\n", "#define ", "#undef ", "defined(", "\n", "\\\n", " 0", " 1",
    "__kernel ", "kernel ", "void ", "struct ", "typedef ", "union ", "float3 ", "double ", "long int ", "unsigned ", "int ",
    "__global ", "const ", "*", "(", ")", "{", "}", ";", ",", "[", "]", "[3]", "/*", "*/", "//", "__attribute__((", "packed",
    "#include \"h.h\"\n", "##", "#", " && ", " || ", " << ", "?", ":", "9223372036854775807", "0x", "'"};
const std::vector<std::string> kWorkloadWords = {
    "{", "}", "[", "]", ",", ":", "\"", "null", "true", "-1", "0", "1e308", "-1e308", "9223372036854775807", "18446744073709551616",
    "\"shape\"", "\"expr\"", "\"var\"", "\"mul\"", "\"add\"", "\"uniform\"", "\"fill\"", "\"arange\"", "\"count\"", "\"shapes\"",
    "\"source_file\"", "\"../x\"", "\"/etc/passwd\"", "\"bytes\"", "\"local\"", "\"global\"", "\"f64\"", "\"f16\"", "\\u0000"};
const std::vector<std::string> kSizeWords = {
    "+", "-", "*", "/", "(", ")", "min(", "max(", "ceil_div(", "floor_div(", ",", "n", "i", " ", "0", "1", "-1",
    "9223372036854775807", "9223372036854775808", "4611686018427387907", "2147483648"};

struct Mutator {
  std::mt19937_64 rng;
  const std::vector<std::string>& corpus;
  const std::vector<std::string>& words;
  size_t below(size_t n) { return n ? static_cast<size_t>(rng() % n) : 0; }
  std::string next() {
    std::string s = corpus[below(corpus.size())];
    for (int k = 0, n = 1 + static_cast<int>(below(4)); k < n; ++k) {
      const size_t at = below(s.size() + 1);
      switch (below(6)) {
        case 0:
          if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1u << below(8));
          break;
        case 1: s.erase(at, below(16) + 1); break;
        case 2: {
          const size_t len = std::min(s.size() - std::min(at, s.size()), below(64) + 1);
          const std::string part = s.substr(at, len);
          for (int r = 0, t = 1 + static_cast<int>(below(3)); r < t; ++r) s.insert(at, part);
          break;
        }
        case 3: {
          const std::string& o = corpus[below(corpus.size())];
          const size_t from = below(o.size() + 1);
          s.insert(at, o.substr(from, below(128) + 1));
          break;
        }
        default: s.insert(at, words[below(words.size())]); break;
      }
      if (s.size() > (1u << 16)) s.resize(1u << 16);
    }
    return s;
  }
};

void read_reader(const std::string& src) {
  encore::detail::SignatureRead r = encore::detail::read_signatures(src);
  if (r.ok()) (void)encore::detail::resolve_pointees(r.kernels, src, {}, "", nullptr);
}

void read_size(const std::string& text) {
  static const std::vector<encore::Variable> vars{encore::Variable("n", 0, int64_t{1} << 62), encore::Variable("i", -1000, 1000)};
  encore::Size s = encore::Size::parse(text, vars);
  (void)s.str();
  try {
    (void)s.range();
  } catch (const encore::ArgumentError&) {
  }
  for (int64_t v : {int64_t{0}, int64_t{3}, (int64_t{1} << 62) + 3}) {
    try {
      (void)s.eval(v);
    } catch (const encore::ArgumentError&) {
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: encore-fuzz reader|workload|size CORPUS_DIR SECONDS [SEED]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const std::filesystem::path dir = argv[2];
  const double seconds = std::stod(argv[3]);
  const uint64_t seed = argc > 4 ? std::stoull(argv[4]) : static_cast<uint64_t>(std::random_device{}());
  std::vector<std::string> corpus;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    corpus.push_back(ss.str());
  }
  const std::vector<std::string>* words = mode == "reader" ? &kReaderWords : mode == "workload" ? &kWorkloadWords : mode == "size" ? &kSizeWords : nullptr;
  if (!words || corpus.empty()) {
    std::fprintf(stderr, "encore-fuzz: unknown mode \"%s\" or empty corpus %s\n", mode.c_str(), dir.c_str());
    return 2;
  }
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL}) signal(sig, on_fatal);
  auto run = [&](const std::string& s) {
    if (mode == "reader") read_reader(s);
    else if (mode == "workload") (void)encore::workload::parse(s, dir, dir);  // --root: files only from the corpus
    else read_size(s);
  };
  Mutator m{std::mt19937_64(seed), corpus, *words};
  using clock = std::chrono::steady_clock;
  const auto end = clock::now() + std::chrono::duration<double>(seconds);
  const double slow_s = 5;  // the blowups found so far took 10 s and more
  uint64_t n = 0, refused = 0;
  for (; n == 0 || clock::now() < end; ++n) {
    current = n < corpus.size() ? corpus[n] : m.next();  // the corpus itself first
    const auto t0 = clock::now();
    try {
      run(current);
    } catch (const encore::Error&) {
      ++refused;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "encore-fuzz %s (seed %llu, input %llu): %s escaped, not an encore::Error. The input:\n%s\n", mode.c_str(),
                   static_cast<unsigned long long>(seed), static_cast<unsigned long long>(n), e.what(), current.c_str());
      return 1;
    }
    const double took = std::chrono::duration<double>(clock::now() - t0).count();
    if (took > slow_s) {
      std::fprintf(stderr, "encore-fuzz %s (seed %llu, input %llu): one input took %.1f s (bound %.0f s). The input:\n%s\n", mode.c_str(),
                   static_cast<unsigned long long>(seed), static_cast<unsigned long long>(n), took, slow_s, current.c_str());
      return 1;
    }
  }
  std::printf("encore-fuzz %s: %llu inputs in %.0f s (seed %llu), %llu refused with an encore::Error, none failed\n", mode.c_str(),
              static_cast<unsigned long long>(n), seconds, static_cast<unsigned long long>(seed), static_cast<unsigned long long>(refused));
  return 0;
}
