#pragma once
// What a kernel's body shows it does with each pointer parameter (KernelParam::inferred_access), read
// from the preprocessed tokens of the program (core/preprocessor.hpp). Foreign OpenCL C rarely says
// `const`, so without this every pointer parameter would count as read-write: pruning would keep
// items it could drop, and every item would look dependent on the one before.
//
// The rule is a whitelist, so that anything the reader does not recognise stays inout (a wrong `in`
// would let pruning drop a launch whose writes replay then misses):
//   none  - the name never appears in the body;
//   in    - every use reads an element: p[i], p[i].f, *p, vloadN(k, p + off), with nothing after it
//           that assigns, increments or takes its address;
//   inout - everything else: a store (p[i] = , p[i] += , ++p[i], *p = , p->f = ), the pointer itself
//           used as a value (passed to a function, assigned, converted, offset, compared, atomics,
//           vstoreN), its address taken, and the whole kernel when its body holds something the
//           reader cannot follow (a function-like macro, an undecided #if, inline asm, a cast to a
//           pointer type of anything but a parameter).
// Each inout says why (the first use that made it so), for ENCORE_DEBUG=1's line per kernel, and
// whether it is store_only: every use stores whole elements (p[i] = v, vstoreN(v, i, p + off)) and
// none reads through it, which proves an encore::out claim.
#include <string>
#include <vector>

#include "encore/program.hpp"

namespace encore::detail {

struct ParamAccess {
  Access access = Access::inout;
  std::string why;  // for inout: the use that made it so ("stored through: p [ i ] +=")
  // inout only: every use stores whole elements (p[i] = v, vstoreN) and none reads one, so an
  // encore::out claim on it holds and needs no trial run at capture (KernelParam::inferred_store_only)
  bool store_only = false;
};

// Per parameter of a kernel whose body is tokens [begin, end) of `t` (t[begin] is its "{"). Entries
// of parameters that are not __global/__constant pointers are left at inout (their access does not
// come from here).
std::vector<ParamAccess> infer_access(const std::vector<std::string>& t, size_t begin, size_t end, const std::vector<KernelParam>& params);

// "a in, b none, c inout (stored through: c [ i ] =)": the ENCORE_DEBUG=1 line's body.
std::string describe_access(const std::vector<KernelParam>& params, const std::vector<ParamAccess>& acc);

}  // namespace encore::detail
