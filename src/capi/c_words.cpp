// The C++ -> C phrase table (c_words.hpp) and its rewriting.
#include "capi/c_words.hpp"

#include <cctype>
#include <cstring>
#include <string_view>

namespace encore::capi {

namespace {

constexpr CPhrase kPhrases[] = {
    // element types and reinterpretation (src/exec/kernel_launch.cpp, src/core/program.cpp)
    {"buf.as(DType::{t})", "encore_buffer_as(buf, ENCORE_{t}, &view)"},
    {" (as(DType::{t}) given; drop it to take the parameter's type)",
     " (value.variable.as = ENCORE_{t} given; set it to ENCORE_DTYPE_DEFAULT to take the parameter's type)"},
    {"use Variable::f32 or f64", "create it with encore_variable_create_f32 or encore_variable_create_f64"},
    {"(use Variable::f64)", "(use encore_variable_create_f64)"},
    {"(Device::supports(DType::f16) tells beforehand)", "(encore_device_supports(dev, ENCORE_F16, &ok) tells beforehand)"},
    // argument kinds (kernel_launch.cpp, enqueue.cpp, exec_item.cpp, native_item.cpp)
    {"expected encore::bytes(value) with the ", "expected an ENCORE_ARG_BYTES argument with the "},
    {"(e.g. std::array<float, 4> for a float4,", "(e.g. a float[4] for a float4,"},
    {"encore::bytes: ", "ENCORE_ARG_BYTES: "},
    {"(encore::LocalMem{bytes})", "(an ENCORE_ARG_LOCAL_BYTES argument)"},
    {"pass smaller encore::LocalMem sizes", "pass smaller ENCORE_ARG_LOCAL_BYTES sizes"},
    {"(encore::in/out/inout(buf))", "(ENCORE_ARG_BUFFER_IN, ENCORE_ARG_BUFFER_OUT or ENCORE_ARG_BUFFER_INOUT)"},
    {"with encore::in, encore::out or encore::inout", "with ENCORE_ARG_BUFFER_IN, ENCORE_ARG_BUFFER_OUT or ENCORE_ARG_BUFFER_INOUT"},
    // variables reaching a jit call (src/core/variable.cpp, src/unit/capture_check.cpp, src/unit/jit.cpp)
    {"as a BoundVar argument: jit(..., var.bind(value))", "in the vars of encore_jit_call (encore_variable_bind_int, encore_variable_bind_float)"},
    {"this thread's last bind()", "this thread's last binding"},
    {"(jit(..., v.bind(value)))", "(in the vars of encore_jit_call: encore_variable_bind_int, encore_variable_bind_float)"},
    {"(jit(x, v.bind(value)))", "(in the vars of encore_jit_call: encore_variable_bind_int, encore_variable_bind_float)"},
    {"(var.bind(x))", "(in the vars of encore_jit_call: encore_variable_bind_int)"},
    {"(jit(buf, ...))", "(in the inputs of encore_jit_call)"},
    // the capture check's off switch and host inputs (capture_check.cpp)
    {"JitOptions::capture.check_closure = false", "check_closure = 0 in its encore_jit_options"},
    {"(a std::span<const T> argument of the TinyJit call, Capture::add_host_input)",
     "(an encore_host_input of encore_jit_call_hosts, encore_capture_add_host_input)"},
    {"encore::bytes_from names ", "encore_arg_bytes_from names "},
    {"encore::bytes_from: ", "encore_arg_bytes_from: "},
    {"launch with encore::bytes_from(span) ", "launch with encore_arg_bytes_from of its bytes "},
    {"(or a part of it: bytes_from(span, offset, size))", "(or a part of them)"},
    {"declare its memory with Capture::add_host_input (encore_capture_add_host_input)", "declare its memory with encore_capture_add_host_input"},
    {"encore::bytes_from (encore_arg_bytes_from) of that memory", "encore_arg_bytes_from of that memory"},
    {"(ExecutionUnit::bind_host_input, encore_unit_bind_host_input)", "(encore_unit_bind_host_input)"},
    {"(a std::span<const T> argument)", "(an encore_host_input of encore_jit_call_hosts)"},
    {"Copy in from the span argument itself (or a subspan of it) on every call.",
     "Write from the host input's own bytes (or a part of them) with encore_buffer_write on every call."},
    {"as a host span argument (std::span<const T>) and copy in from it", "as a host input (encore_jit_call_hosts) and write from it"},
    {"TinyJit: the callable issued no device work during capture (no launch, copy or copyin on this thread)",
     "the step callback issued no device work during capture (no encore_launch, encore_copy or encore_buffer_write on this thread)"},
    // host reads inside a capture (src/core/buffer.cpp)
    {"set CaptureOptions::allow_copyout (JitOptions::capture.allow_copyout)",
     "set allow_copyout in the encore_unit_options of encore_capture_begin (or the encore_jit_options of encore_jit_create)"},
    {"copyout_async of ", "a read of "},
    {"(a partial copyout takes an offset: copyout(data, offset))", "(a partial read takes an offset: encore_buffer_read)"},
    {"(a partial copyin takes an offset: copyin(data, offset))", "(a partial write takes an offset: encore_buffer_write)"},
    {"Pass a copy, or set fresh_outputs", "Pass a copy, or set fresh_outputs in the encore_jit_options"},
    // explicit captures (src/unit/jit.cpp, src/core/recorder.cpp): the C function's name leads the message
    {"Capture::end: ", ""},
    {"Capture::end called twice", "encore_capture_end called twice"},
    {"Capture::end must be called", "encore_capture_end must be called"},
    {"Capture::add_input: ", ""},
    {"Capture::add_output: ", ""},
    {"Capture::check_against: ", ""},
    {"the unit was not made by Capture::end (a TinyJit's unit, or a concatenation)",
     "the unit was not made by encore_capture_end (a jit's unit, or a concatenation)"},
    {"declare it with Capture::add_input (encore_capture_add_input)", "declare it with encore_capture_add_input"},
    {"(ExecutionUnit::bind_var, encore_unit_bind_var)", "(encore_unit_bind_var_int, encore_unit_bind_var_float)"},
    {"(Capture::check_against / encore_capture_check_against compared", "(encore_capture_check_against compared"},
    {"Capture: another capture is already recording on this thread",
     "another capture (encore_capture_begin, or a jit's warm-up or capture) is already recording on this thread"},
    // steps that decide (src/exec/flow_items.cpp)
    {"(Device::host(reads, sets, fn))", "(the sets of encore_host)"},
    {"(Device::loop_while)", "(encore_loop_while)"},
    {"(Device::when, select, repeat, loop_while)", "(encore_when, encore_select, encore_repeat, encore_loop_while)"},
    {"(Device::host, a loop_while condition)", "(encore_host, an encore_loop_while condition)"},
    // names that lead a message, where the C function's own name already does
    {"Device::split: ", ""},
    {"Buffer::view: ", ""},
    {"Buffer::as: ", ""},
    {"encore::opencl::adopt: ", ""},
    {"encore::opencl::enqueue_native: ", ""},
    {"encore::opencl::native: ", ""},
    {"encore::opencl::", ""},  // the other interop names (context, queue, ...) lead their messages too
    {"UnitOptions::max_in_flight", "encore_unit_options.max_in_flight"},
    {"JitOptions::unit.max_in_flight", "encore_jit_options.max_in_flight"},
    {"ExecutionUnit::", "encore_unit_"},
    // the general forms, for a phrase the rows above do not name
    {"JitOptions::capture.", "encore_jit_options."},
    {"JitOptions::", "encore_jit_options."},
    {"CaptureOptions::", "encore_unit_options."},
    {"DType::{t}", "ENCORE_{t}"},
};

// Matches `pat` (with at most one "{t}") at msg[at]: the length matched and the dtype text, or 0.
size_t match(std::string_view msg, size_t at, std::string_view pat, std::string& dtype) {
  const size_t t = pat.find("{t}");
  if (t == std::string_view::npos) return msg.compare(at, pat.size(), pat) == 0 ? pat.size() : 0;
  if (msg.compare(at, t, pat.substr(0, t)) != 0) return 0;
  size_t i = at + t;
  const size_t name = i;
  while (i < msg.size() && (std::islower(static_cast<unsigned char>(msg[i])) || std::isdigit(static_cast<unsigned char>(msg[i])))) ++i;
  if (i == name) return 0;
  const std::string_view rest = pat.substr(t + 3);
  if (msg.compare(i, rest.size(), rest) != 0) return 0;
  dtype.assign(msg.substr(name, i - name));
  for (char& ch : dtype) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return i + rest.size() - at;
}

}  // namespace

std::span<const CPhrase> c_phrases() { return kPhrases; }

std::string in_c_words(std::string msg) {
  std::string dtype;
  for (const CPhrase& p : kPhrases) {
    const std::string_view pat(p.cxx);
    const std::string_view lead = pat.substr(0, pat.find("{t}"));  // where a match can start
    for (size_t at = msg.find(lead); at != std::string::npos; at = msg.find(lead, at)) {
      const size_t n = match(msg, at, pat, dtype);
      if (!n) {
        ++at;
        continue;
      }
      std::string c(p.c);
      if (size_t t = c.find("{t}"); t != std::string::npos) c.replace(t, 3, dtype);
      msg.replace(at, n, c);
      at += c.size();
    }
  }
  return msg;
}

}  // namespace encore::capi
