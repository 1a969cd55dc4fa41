/* encore C API: capture a step of OpenCL work once, replay it every frame.
 *
 * Compiles as C11 and as C++ (also with -fno-exceptions -fno-rtti); includes no OpenCL header.
 * Every function returns an encore_status (ENCORE_OK == 0) and never lets a C++ exception out;
 * on failure encore_last_error() gives this thread's message saying what was expected and found.
 *
 *   encore_device dev;  encore_program prog;  encore_kernel k;  encore_buffer x;
 *   encore_variable dt;  encore_capture cap;  encore_unit unit;  size_t slot;
 *   if (encore_device_open(NULL, &dev) != ENCORE_OK) { puts(encore_last_error()); return 1; }
 *   encore_program_compile(dev, "__kernel void step(__global float* x, float dt) {"
 *                               " x[get_global_id(0)] += dt; }", NULL, &prog);
 *   encore_kernel_create(prog, "step", &k);
 *   encore_buffer_alloc(dev, ENCORE_F32, 1024, &x);
 *   encore_variable_create_f32("dt", 0.0, 1.0, &dt);
 *
 *   encore_capture_begin(NULL, &cap);                       // record this thread's work
 *   encore_capture_add_input(cap, x, &slot);                // x becomes input slot 0
 *   size_t n = 1024;
 *   encore_arg args[2] = {encore_arg_buffer(x), encore_arg_variable(dt)};
 *   encore_launch(dev, k, &n, NULL, 1, args, 2);            // runs now and is recorded
 *   encore_capture_end(cap, &unit);                         // consumes cap
 *
 *   for (int tick = 0; tick < 1000; ++tick) {               // hot path: by slot, no allocation
 *     encore_unit_bind_var_float(unit, 0, 1.0 / 60);
 *     encore_unit_run(unit, NULL, 0, NULL);
 *   }
 *   encore_buffer_copyout(x, host, 1024 * sizeof(float));  // waits for the work writing x
 *   encore_unit_destroy(unit); encore_variable_destroy(dt); encore_buffer_destroy(x);
 *   encore_kernel_destroy(k); encore_program_destroy(prog); encore_device_destroy(dev);
 *
 * Handles are opaque values (slot + generation) checked on every call: NULL, destroyed, wrong-type
 * handles and values encore never handed out give ENCORE_ERROR_INVALID_HANDLE, never a crash. Each handle owns one reference: destroying a
 * handle never invalidates another (a unit keeps the buffers and kernels it uses alive).
 * Handles are not secrets: a guessed small value can hit a live handle of the same type (the
 * callers of a C API are trusted code in the same process), but never one of another type, which
 * is always ENCORE_ERROR_INVALID_HANDLE naming both types.
 *
 * OpenCL interop (adopting an engine's cl_command_queue / cl_mem / cl_event, handing out native
 * handles): the functions at the end of this header take `struct _cl_command_queue*` etc., which
 * are exactly cl_command_queue, cl_mem, cl_event and cl_context from <CL/cl.h>; they are declared
 * only by their incomplete struct names, so no OpenCL header is needed to include this one.
 *
 * Threads: the handle table is thread-safe, and a call holds the object behind each handle it was
 * given until it returns, so destroying a handle while another thread uses it (waits for an event,
 * runs a unit) is safe: that call finishes, later ones give ENCORE_ERROR_INVALID_HANDLE. Buffer
 * names may be set while other threads use the buffer. Otherwise one object may be used from
 * several threads as the C++ API allows (see the encore/ C++ headers): a unit or a capture by one
 * thread at a time (a unit run, bound or freed while another thread runs, binds or frees it is
 * ENCORE_ERROR_JIT), a jit from any thread (calls are serialised). A capture records the work of the
 * thread that began it.
 *
 * Re-entrancy: a callback runs inside the encore call that invokes it.
 * - A jit's step (encore_step_fn) may issue work with every function here, except calls on its own
 *   jit (encore_jit_call, _reset, _destroy, _calls, _get_stats: ENCORE_ERROR_INVALID_ARGUMENT).
 * - A native callback (encore_native_fn) runs eagerly, while captured and on every replay, in the
 *   middle of a step: it may enqueue native work on the queue it is given, query (get_info,
 *   counts, stats, *_native, event_done), wait for events, create and destroy handles and set
 *   buffer names. Every call that enqueues, records or runs work or changes a unit or jit
 *   (encore_launch*, encore_copy, encore_buffer_copyin/out, _write/_read, _fill, encore_enqueue_native,
 *   encore_capture_begin/_end/_destroy, encore_unit_run*, _bind_*, _free_intermediates,
 *   encore_jit_call, _reset) is refused with ENCORE_ERROR_JIT: that work would not be part of the
 *   step (a capture would record it besides the callback, and every replay would issue it again).
 */
#ifndef ENCORE_ENCORE_H
#define ENCORE_ENCORE_H

#include <stddef.h>
#include <stdint.h>

#if defined(ENCORE_STATIC)
#define ENCORE_C_API
#elif defined(_WIN32)
#ifdef ENCORE_BUILDING
#define ENCORE_C_API __declspec(dllexport)
#else
#define ENCORE_C_API __declspec(dllimport)
#endif
#else
#define ENCORE_C_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status, errors, version ------------------------------------------------------------ */

typedef enum encore_status {
  ENCORE_OK = 0,
  ENCORE_ERROR_INVALID_ARGUMENT = 1, /* NULL pointer, wrong size, out-of-range slot or value */
  ENCORE_ERROR_INVALID_HANDLE = 2,   /* NULL, destroyed, garbage or wrong-type handle */
  ENCORE_ERROR_DEVICE = 3,           /* no such device, or an OpenCL call failed */
  ENCORE_ERROR_COMPILE = 4,          /* program build failed; the build log is in encore_last_error() */
  ENCORE_ERROR_JIT = 5,              /* a capture/replay rule was broken (inputs not matching, ...) */
  ENCORE_ERROR_OUT_OF_MEMORY = 6,    /* host or device allocation failed */
  ENCORE_ERROR_UNSUPPORTED = 7,      /* not available in this build */
  ENCORE_ERROR_WORKLOAD = 8,         /* a saved unit's file cannot be read or written, or holds what a loaded unit cannot
                                        (encore_unit_save / encore_unit_load, encore/encore_workload.h) */
  ENCORE_ERROR_UNKNOWN = 9,          /* anything else */
  ENCORE_STATUS_MAX_ENUM = 0x7fffffff /* (not a status: makes every int a valid value, as in C) */
} encore_status;

/* The message of the last call that failed on this thread ("" if none); valid until the next failing call. */
ENCORE_C_API const char* encore_last_error(void);
/* "ENCORE_ERROR_COMPILE", ...; "ENCORE_STATUS_UNKNOWN" for values outside the enum. */
ENCORE_C_API const char* encore_status_name(encore_status status);
/* The library's version, "MAJOR.MINOR.PATCH". */
ENCORE_C_API const char* encore_version(void);

/* ---- handles and plain types ------------------------------------------------------------- */

typedef struct encore_device_t* encore_device;     /* a device and its in-order queue */
typedef struct encore_buffer_t* encore_buffer;     /* device memory (or a view of it) */
typedef struct encore_program_t* encore_program;   /* OpenCL C compiled for one device */
typedef struct encore_kernel_t* encore_kernel;     /* one kernel of a program */
typedef struct encore_variable_t* encore_variable; /* a per-call value: int with bounds, f32 or f64 */
typedef struct encore_capture_t* encore_capture;   /* an explicit capture in progress */
typedef struct encore_unit_t* encore_unit;         /* a captured step, ready to replay */
typedef struct encore_jit_t* encore_jit;           /* a TinyJit over a C step callback */
typedef struct encore_event_t* encore_event;       /* completion of enqueued work */
typedef struct encore_size_expr_t* encore_size_expr; /* a launch-size expression over variables */

/* Element types (values start at 1: 0 is "none / default").
 * ENCORE_BOOL: 1 byte (0 or 1); kernels take such buffers as uchar* or char*.
 * ENCORE_BF16: bfloat16 bits, storage only (buffers, copies, uploads); kernels take them as ushort*.
 * ENCORE_F16: storage everywhere (vload_half / vstore_half); half arithmetic and by-value half
 * parameters need cl_khr_fp16 (encore_device_supports). */
typedef enum encore_dtype {
  ENCORE_DTYPE_DEFAULT = 0,
  ENCORE_F16 = 1, ENCORE_F32, ENCORE_F64,
  ENCORE_I8, ENCORE_I16, ENCORE_I32, ENCORE_I64,
  ENCORE_U8, ENCORE_U16, ENCORE_U32, ENCORE_U64,
  ENCORE_BOOL, ENCORE_BF16,
  ENCORE_DTYPE_MAX_ENUM = 0x7fffffff /* (not a dtype: makes every int a valid value, as in C) */
} encore_dtype;

/* Bytes per element of a dtype; 0 for an invalid one. */
ENCORE_C_API size_t encore_dtype_size(encore_dtype dtype);

/* A value for a variable, as returned by encore_variable_bind_* and passed to encore_jit_call. */
typedef struct encore_bound_var {
  encore_variable var;
  int64_t i; /* integer value (integer variables) */
  double f;  /* float value (float variables; also i as a double) */
} encore_bound_var;

/* ---- devices ----------------------------------------------------------------------------- */

/* Opens a device by name: NULL or "" = default (ENCORE_DEVICE, else first GPU, else first OpenCL
 * device), "CL", "CL:N", "NULL" (a no-op device: kernels do not run). A device number that does
 * not exist (or does not fit an int) is ENCORE_ERROR_DEVICE listing the devices that exist. */
ENCORE_C_API encore_status encore_device_open(const char* name, encore_device* out);
/* Releases this handle (the device lives on while buffers, programs or units use it). */
ENCORE_C_API encore_status encore_device_destroy(encore_device dev);
/* The device's id ("CL:0", "NULL") and name; the strings live as long as the device. */
ENCORE_C_API encore_status encore_device_info(encore_device dev, const char** id, const char** name);
/* *out = 1 when kernels on the device can compute with `dtype` and take it by value (ENCORE_F16
 * needs cl_khr_fp16, ENCORE_F64 cl_khr_fp64; the others always), else 0. Buffers of every dtype
 * work everywhere as storage. */
ENCORE_C_API encore_status encore_device_supports(encore_device dev, encore_dtype dtype, int* out);
/* Waits until all work queued on the device has finished. */
ENCORE_C_API encore_status encore_device_synchronize(encore_device dev);
/* Splits the device into `parts` sub-devices (compute units / parts compute units each, one new
 * context shared by them; ids "CL:0.0", "CL:0.1", ...; the NULL device gives NULL devices): out[0..parts-1]
 * receive new handles, each released with encore_device_destroy. parts is 1..64
 * (ENCORE_ERROR_INVALID_ARGUMENT otherwise). On failure (ENCORE_ERROR_DEVICE naming the OpenCL
 * status, e.g. more parts than compute units) no handle is made. */
ENCORE_C_API encore_status encore_device_split(encore_device dev, unsigned parts, encore_device* out);

/* ---- buffers ----------------------------------------------------------------------------- */

typedef struct encore_buffer_info {
  encore_dtype dtype;
  size_t count;  /* elements */
  size_t nbytes; /* count * encore_dtype_size(dtype) */
  size_t offset; /* byte offset into the base storage (0 unless a view) */
  int is_view;
} encore_buffer_info;

/* A buffer of `count` elements of `dtype` on `dev` (allocated on first use). */
ENCORE_C_API encore_status encore_buffer_alloc(encore_device dev, encore_dtype dtype, size_t count, encore_buffer* out);
/* A view of `count` elements starting at element `offset` (byte offset aligned to the device's base alignment). */
ENCORE_C_API encore_status encore_buffer_view(encore_buffer buf, size_t offset, size_t count, encore_buffer* out);
/* All of `buf`'s bytes as elements of `dtype` (its byte size must be a multiple of the dtype's): launches check a buffer's
 * dtype against the kernel parameter's pointee type, so this is how to pass bytes as another type on purpose. */
ENCORE_C_API encore_status encore_buffer_as(encore_buffer buf, encore_dtype dtype, encore_buffer* out);
/* A second handle to the same buffer (destroy both). */
ENCORE_C_API encore_status encore_buffer_retain(encore_buffer buf, encore_buffer* out);
/* Releases this handle. */
ENCORE_C_API encore_status encore_buffer_destroy(encore_buffer buf);
/* dtype, count, bytes and view offset. */
ENCORE_C_API encore_status encore_buffer_get_info(encore_buffer buf, encore_buffer_info* out);
/* Host -> device; nbytes must equal the buffer's size. Blocks until the data is taken. */
ENCORE_C_API encore_status encore_buffer_copyin(encore_buffer buf, const void* src, size_t nbytes);
/* Device -> host; nbytes must equal the buffer's size. Waits for the work that writes the buffer. */
ENCORE_C_API encore_status encore_buffer_copyout(encore_buffer buf, void* dst, size_t nbytes);
/* Partial transfers: `count` elements from element `offset` on (any offset; they must fit, and count
 * is at least 1: ENCORE_ERROR_INVALID_ARGUMENT otherwise). Inside a capture a write is an upload item
 * like a whole copyin. Refused inside a native callback (ENCORE_ERROR_JIT), like copyin and copyout. */
ENCORE_C_API encore_status encore_buffer_write(encore_buffer buf, size_t offset, const void* src, size_t count);
ENCORE_C_API encore_status encore_buffer_read(encore_buffer buf, size_t offset, void* dst, size_t count);
/* encore_buffer_read that does not block: queued after the work queued on the buffer's device so
 * far; *out (required) receives an event that completes once dst holds the bytes (encore_event_wait,
 * encore_event_done). dst must stay valid, and untouched by the host, until that event has
 * completed. encore_event_destroy before completion WAITS for the read (never cancels it), so
 * destroying the event before freeing dst is always safe. Inside a capture it is refused like
 * encore_buffer_copyout (unless encore_unit_options.allow_copyout). On NULL it completes at once. */
ENCORE_C_API encore_status encore_buffer_read_async(encore_buffer buf, size_t offset, void* dst, size_t count, encore_event* out);
/* Sets every element of the buffer (a view: its elements) to one value: `value` points to one
 * element of the buffer's dtype, value_size is that element's size. Queued on the buffer's device
 * like a copy; inside a capture it is a fill item, replayed every call. */
ENCORE_C_API encore_status encore_buffer_fill(encore_buffer buf, const void* value, size_t value_size);
/* Tells encore the buffer was written through a native handle (captured units re-run one-time work). */
ENCORE_C_API encore_status encore_buffer_touch(encore_buffer buf);
/* A label for error messages and traces (copied). */
ENCORE_C_API encore_status encore_buffer_set_name(encore_buffer buf, const char* name);

/* ---- programs and kernels ---------------------------------------------------------------- */

/* Compiles OpenCL C for `dev` (options may be NULL). ENCORE_ERROR_COMPILE with the build log on failure. */
ENCORE_C_API encore_status encore_program_compile(encore_device dev, const char* source, const char* options,
                                                  encore_program* out);
/* Releases this handle. */
ENCORE_C_API encore_status encore_program_destroy(encore_program prog);
/* A kernel by name (the message lists the kernels that exist when there is none). */
ENCORE_C_API encore_status encore_kernel_create(encore_program prog, const char* name, encore_kernel* out);
/* Releases this handle. */
ENCORE_C_API encore_status encore_kernel_destroy(encore_kernel kernel);

/* A kernel's work-group limits on its device (OpenCL's CL_KERNEL_* work-group queries; on the NULL
 * device its limits, no memory of its own, and the source's reqd_work_group_size). Set `size` to
 * sizeof(encore_work_group_info) first: the struct may grow at its end, and only `size` bytes are written.
 *   encore_work_group_info w = {sizeof w};  encore_kernel_work_group_info(k, &w); */
typedef struct encore_work_group_info {
  size_t size;               /* in: sizeof(encore_work_group_info) as the caller knows it */
  size_t max_size;           /* CL_KERNEL_WORK_GROUP_SIZE: most work-items per group (the automatic local size keeps to it) */
  size_t preferred_multiple; /* CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE */
  uint64_t local_mem_bytes;  /* CL_KERNEL_LOCAL_MEM_SIZE: __local memory the kernel declares (arguments come on top) */
  uint64_t private_mem_bytes; /* CL_KERNEL_PRIVATE_MEM_SIZE: per work-item */
  size_t compile_size[3];    /* CL_KERNEL_COMPILE_WORK_GROUP_SIZE: reqd_work_group_size, zeros when none */
} encore_work_group_info;
ENCORE_C_API encore_status encore_kernel_work_group_info(encore_kernel kernel, encore_work_group_info* out);

/* ---- variables --------------------------------------------------------------------------- */

/* An integer variable with inclusive bounds. Passed with encore_arg_variable it takes the kernel
 * parameter's integer type (int, long, ulong, ...: each value is checked against it when bound);
 * encore_arg_variable_as fixes the type, which must then be the parameter's. */
ENCORE_C_API encore_status encore_variable_create_int(const char* name, int64_t min, int64_t max, encore_variable* out);
/* A float variable passed to kernels as float; its bounds are clamped to the float range (+-FLT_MAX),
 * so a value that would reach the kernel as inf is ENCORE_ERROR_INVALID_ARGUMENT. */
ENCORE_C_API encore_status encore_variable_create_f32(const char* name, double min, double max, encore_variable* out);
/* A float variable passed to kernels as double. */
ENCORE_C_API encore_status encore_variable_create_f64(const char* name, double min, double max, encore_variable* out);
/* Releases this handle. */
ENCORE_C_API encore_status encore_variable_destroy(encore_variable var);
/* Checks the bounds, makes `value` this thread's current value (eager work sees it) and returns the pair (out may be NULL). */
ENCORE_C_API encore_status encore_variable_bind_int(encore_variable var, int64_t value, encore_bound_var* out);
/* The same for a float value (an integer variable accepts only integral values). */
ENCORE_C_API encore_status encore_variable_bind_float(encore_variable var, double value, encore_bound_var* out);

/* ---- launches and copies ----------------------------------------------------------------- */

typedef enum encore_arg_kind {
  ENCORE_ARG_BUFFER = 0,   /* access from the kernel's const qualifiers */
  ENCORE_ARG_BUFFER_IN,
  ENCORE_ARG_BUFFER_OUT,
  ENCORE_ARG_BUFFER_INOUT,
  /* A host integer converts to the parameter's integer type when its value fits (a size_t
   * passed with encore_arg_u64 to an int parameter); a value out of range is
   * ENCORE_ERROR_INVALID_ARGUMENT naming the parameter, the value and the type's range. */
  ENCORE_ARG_I32, ENCORE_ARG_U32, ENCORE_ARG_I64, ENCORE_ARG_U64, ENCORE_ARG_F32, ENCORE_ARG_F64,
  ENCORE_ARG_VARIABLE,     /* value.variable: its current value per call */
  ENCORE_ARG_LOCAL_BYTES,  /* value.local_bytes of __local memory */
  ENCORE_ARG_BYTES,        /* value.bytes: a by-value vector or struct (float4, a struct parameter), copied at the launch */
  ENCORE_ARG_BYTES_FROM,   /* value.bytes, from a host input: the per-call form (encore_arg_bytes_from) */
  ENCORE_ARG_KIND_MAX_ENUM = 0x7fffffff /* (not a kind: makes every int a valid value, as in C) */
} encore_arg_kind;

/* One kernel argument: a tagged union. Build them with the encore_arg_* helpers below. */
typedef struct encore_arg {
  encore_arg_kind kind;
  union {
    encore_buffer buffer;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
    double f64;
    struct {
      encore_variable var;
      encore_dtype as; /* ENCORE_DTYPE_DEFAULT: i32 for integer variables, own type for float ones */
    } variable;
    size_t local_bytes;
    struct {
      const void* data;
      size_t size; /* 1 to 65536, and the parameter's size where its type tells (scalars, vectors, structs the
                      source defines): checked before any byte is read (ENCORE_ERROR_INVALID_ARGUMENT) */
    } bytes;
  } value;
} encore_arg;

/* A launch size affine in an integer variable: mul * var + add (var NULL: the literal `add`), or,
 * when `expr` is set (and var is NULL), that expression. Build one with encore_size_of,
 * encore_size_affine or encore_size_of_expr (or zero-initialise it): a garbage `expr` is an
 * ENCORE_ERROR_INVALID_HANDLE. A value for which it overflows int64 or
 * divides by zero is ENCORE_ERROR_INVALID_ARGUMENT (eagerly, and when a unit's variable is bound),
 * never a wrapped size. */
typedef struct encore_size {
  encore_variable var;
  int64_t mul;
  int64_t add;
  encore_size_expr expr; /* NULL: the affine form */
} encore_size;

/* Reads a launch-size expression over `vars` (named by their names): integers, + - *, / (floor
 * division), parentheses, min(a,b) max(a,b) ceil_div(a,b) floor_div(a,b), e.g. "16*((n-i)/16-1)".
 * A syntax error or an unknown name is ENCORE_ERROR_INVALID_ARGUMENT naming the position. A capture
 * checks it over the variables' ranges: one that may overflow, divide by zero, be negative (global)
 * or below 1 (local) is an error when the capture ends. The expression keeps its variables alive. */
ENCORE_C_API encore_status encore_size_expr_parse(const char* text, const encore_variable* vars, size_t num_vars,
                                                  encore_size_expr* out);
/* Its bounds over its variables' ranges (ENCORE_ERROR_INVALID_ARGUMENT when it may overflow or
 * divide by zero), and its value with each variable's current value on this thread. */
ENCORE_C_API encore_status encore_size_expr_range(encore_size_expr expr, int64_t* lo, int64_t* hi);
ENCORE_C_API encore_status encore_size_expr_eval(encore_size_expr expr, int64_t* value);
/* Releases this handle (sizes already launched or captured keep what they need). */
ENCORE_C_API encore_status encore_size_expr_destroy(encore_size_expr expr);

/* Launches `kernel` eagerly on `dev` (recorded when a capture is active on this thread). `dims`
 * is 1..3; `local` may be NULL to let encore choose; num_args must be the kernel's argument count.
 * Enum fields of args (kind, value.variable.as) holding no enumerator are ENCORE_ERROR_INVALID_ARGUMENT. */
ENCORE_C_API encore_status encore_launch(encore_device dev, encore_kernel kernel, const size_t* global,
                                         const size_t* local, size_t dims, const encore_arg* args, size_t num_args);
/* The same with sizes affine in variables or expressions and an optional item name (NULL: the kernel's). */
ENCORE_C_API encore_status encore_launch_sized(encore_device dev, encore_kernel kernel, const encore_size* global,
                                               const encore_size* local, size_t dims, const encore_arg* args,
                                               size_t num_args, const char* name);
/* Whole-buffer copy dst <- src (equal byte sizes; src may be on another device). */
ENCORE_C_API encore_status encore_copy(encore_device dev, encore_buffer dst, encore_buffer src);

/* ---- events ------------------------------------------------------------------------------ */

/* Waits until the work behind the event has finished. */
ENCORE_C_API encore_status encore_event_wait(encore_event ev);
/* *done = 1 when finished, 0 when still running (an OpenCL error of the work is an error status). */
ENCORE_C_API encore_status encore_event_done(encore_event ev, int* done);
/* Releases the event handle. */
ENCORE_C_API encore_status encore_event_destroy(encore_event ev);

/* ---- explicit capture and units ---------------------------------------------------------- */

/* Option structs can grow: each starts with its own size, which encore_*_options_init sets (or
 * take encore_*_options_default()). Fields are only ever appended, each at or after the end of
 * the struct of the release before, so a caller built against an older header passes its smaller
 * size and gets the defaults for the fields it lacks. A size that no release had (0, garbage, a
 * newer header's bigger struct) is ENCORE_ERROR_INVALID_ARGUMENT naming the struct. */
typedef struct encore_unit_options {
  size_t size;       /* sizeof(encore_unit_options), set by encore_unit_options_init */
  int prune;         /* drop one-time items from replay (default 1) */
  int plan;          /* plan internal temporaries into one arena (default 1) */
  int allow_copyout; /* permit copyout during capture, its value frozen (default 0) */
  uint32_t max_in_flight; /* replays in flight at most: a run first waits for the one this many
                             runs before (default 3; 0: unbounded; at most 1024) */
  uint32_t min_items_in_flight; /* a short step keeps more replays in flight: at least this many
                                   items' worth, at most 256 replays (default 64; 0: exactly
                                   max_in_flight) */
  uint32_t reserved0; /* the first release's struct ended with padding here: ignored */
  int concurrent;     /* replay independent items concurrently where the device gives more than
                         one queue and the step has at least two independent chains (default 0;
                         see UnitOptions::concurrent) */
} encore_unit_options;

/* Fills the first `size` bytes of *opt with the defaults (prune and plan on) and sets opt->size:
 * pass sizeof(encore_unit_options) (what encore_unit_options_default does). */
ENCORE_C_API encore_status encore_unit_options_init(encore_unit_options* opt, size_t size);

typedef struct encore_unit_stats {
  size_t items, items_pruned, items_replayed;
  size_t inputs, variables;
  uint64_t temp_bytes_naive, temp_bytes_planned;
  size_t planned_temps;
} encore_unit_stats;

/* What the plan found beyond encore_unit_stats (UnitStats' later fields). It grows by appending:
 * set size to sizeof(encore_unit_plan_stats) before the call (encore_unit_plan_stats_default does). */
typedef struct encore_unit_plan_stats {
  size_t size;
  uint64_t temp_bytes_lower_bound; /* the peak, over the step's order, of its live temps' aligned bytes:
                                      no arena can be smaller (temp_bytes_planned is the arena's); in
                                      a concurrent unit independent chains' temps count as live side
                                      by side, so it can be above the in-order unit's bound */
  size_t chains; /* independent chains of the replayed items (1: each waits for the one before);
                    concurrent replay (encore_unit_options.concurrent) has work to overlap from 2 */
  size_t longest_chain; /* the replayed items on the longest chain of dependencies: chains rounds up,
                           so items_replayed - longest_chain says how many can run beside it */
} encore_unit_plan_stats;
static inline encore_unit_plan_stats encore_unit_plan_stats_default(void) {
  encore_unit_plan_stats s;
  s.size = sizeof s;
  s.temp_bytes_lower_bound = 0;
  s.chains = 0;
  s.longest_chain = 0;
  return s;
}

/* The defaults, with size set (inline: the caller's own sizeof). */
static inline encore_unit_options encore_unit_options_default(void) {
  encore_unit_options o;
  encore_unit_options_init(&o, sizeof o);
  return o;
}
/* Starts recording the calling thread's launches, copies and copyins (opt may be NULL). */
ENCORE_C_API encore_status encore_capture_begin(const encore_unit_options* opt, encore_capture* out);
/* Declares an input; *slot (may be NULL) is its slot for encore_unit_bind_input. */
ENCORE_C_API encore_status encore_capture_add_input(encore_capture cap, encore_buffer buf, size_t* slot);
/* Declares `bytes` bytes of host memory at `data` as a host input; *slot (may be NULL) is its slot for
 * encore_unit_bind_host_input. An encore_buffer_write from inside it, and an encore_arg_bytes_from (or
 * encore_arg_bytes) of bytes inside it, replay from the bytes bound to the slot then: until it is
 * bound, the bytes it held when the capture ended (copied); once bound, the memory bound, read at
 * each run (it may change between runs, and right after a run returns). */
ENCORE_C_API encore_status encore_capture_add_host_input(encore_capture cap, const void* data, size_t bytes, size_t* slot);
/* Declares an output (handed out to the caller, never planned). */
ENCORE_C_API encore_status encore_capture_add_output(encore_capture cap, encore_buffer buf);
/* The capture check of this path: encore_capture_end compares this capture with `previous`, a unit
 * an earlier capture of the same frame's work made (frame N-1 for frame N), and fails with
 * ENCORE_ERROR_JIT at the first kernel scalar, launch size, by-value value, buffer or upload that
 * differs, which replay would freeze (a plain float dt: make it an encore_variable; a per-frame struct
 * passed by value: encore_arg_bytes_from of a host input). Without it a
 * capture sees one frame and compares nothing. `previous` may be destroyed afterwards.
 *   encore_capture_check_against(cap, last_frames_unit);
 * What each path checks: encore_jit (TinyJit) records calls 0 and 1 and compares them by default
 * (encore_jit_options.check_closure), and ENCORE_VERIFY=N runs the first N replays eagerly too and
 * compares the results; an explicit capture compares only with a unit given here, and nothing
 * compares its replays with eager runs. */
ENCORE_C_API encore_status encore_capture_check_against(encore_capture cap, encore_unit previous);
/* Ends recording and builds the unit. Consumes `cap` (also on failure). */
ENCORE_C_API encore_status encore_capture_end(encore_capture cap, encore_unit* out);
/* Abandons a capture that was not ended. */
ENCORE_C_API encore_status encore_capture_destroy(encore_capture cap);

/* Releases the unit. */
ENCORE_C_API encore_status encore_unit_destroy(encore_unit unit);
/* Number of input slots and of variable slots. */
ENCORE_C_API encore_status encore_unit_counts(encore_unit unit, size_t* num_inputs, size_t* num_variables);
/* The slot of a variable the unit uses. */
ENCORE_C_API encore_status encore_unit_variable_slot(encore_unit unit, encore_variable var, size_t* slot);
/* Binds the buffer for input `slot` (same dtype, count and device as captured). */
ENCORE_C_API encore_status encore_unit_bind_input(encore_unit unit, size_t slot, encore_buffer buf);
/* Binds host input `slot` (encore_capture_add_host_input) to `bytes` bytes at `data` (the capture's size)
 * for the next runs: each run reads them while it enqueues, so they may change between runs. */
ENCORE_C_API encore_status encore_unit_bind_host_input(encore_unit unit, size_t slot, const void* data, size_t bytes);
/* Sets an integer variable slot for the next runs. */
ENCORE_C_API encore_status encore_unit_bind_var_int(encore_unit unit, size_t slot, int64_t value);
/* Sets a float variable slot for the next runs. */
ENCORE_C_API encore_status encore_unit_bind_var_float(encore_unit unit, size_t slot, double value);
/* Enqueues one replay after the events in wait_list (may be NULL when num_wait is 0): events of
 * the unit's OpenCL context become a barrier on its queue (no host wait), others are waited for on
 * the host. *done_out (NULL: no event is made, at no cost) receives its completion event, to
 * destroy with encore_event_destroy. Returns once the work is enqueued. */
ENCORE_C_API encore_status encore_unit_run(encore_unit unit, const encore_event* wait_list, size_t num_wait,
                                           encore_event* done_out);
/* Runs one replay and waits for it; *seconds (may be NULL) is its device or wall time. */
ENCORE_C_API encore_status encore_unit_run_and_wait(encore_unit unit, double* seconds);
/* Releases the arena of temporaries; the next run allocates it again. */
ENCORE_C_API encore_status encore_unit_free_intermediates(encore_unit unit);
/* What the capture found: items, pruned, planned bytes. */
ENCORE_C_API encore_status encore_unit_get_stats(encore_unit unit, encore_unit_stats* out);
/* The lower bound of the temps' bytes and the chains (out->size set by the caller). */
ENCORE_C_API encore_status encore_unit_get_plan_stats(encore_unit unit, encore_unit_plan_stats* out);
/* A new handle (destroy it) to the buffer named `name` by the unit's maker: encore_unit_load names the
 * saved file's inputs, state, const buffers and outputs (encore/encore_workload.h); a captured unit
 * names none (its buffers are the caller's handles). No such name is ENCORE_ERROR_INVALID_ARGUMENT
 * listing the names. */
ENCORE_C_API encore_status encore_unit_buffer(encore_unit unit, const char* name, encore_buffer* out);
/* A unit running a then b (pruning and planning re-run over the whole). */
ENCORE_C_API encore_status encore_unit_concat(encore_unit a, encore_unit b, encore_unit* out);

/* ---- TinyJit over a C callback ----------------------------------------------------------- */

/* The step: issues work through this API on the inputs (borrowed handles: do not destroy) and
 * fills outputs[0..num_outputs) with handles it hands over (the jit destroys them; to return an
 * input or a state buffer, hand over encore_buffer_retain of it). Runs on calls 0 and 1 (and
 * verify runs) only: host code in it is frozen at capture, so per-call values must be variables
 * (or host inputs, encore_jit_call_hosts: written with encore_buffer_write, passed by value with
 * encore_arg_bytes_from).
 * A status other than ENCORE_OK fails the call with that status. */
typedef encore_status (*encore_step_fn)(void* userdata, const encore_buffer* inputs, size_t num_inputs,
                                        const encore_bound_var* vars, size_t num_vars, encore_buffer* outputs,
                                        size_t num_outputs);

typedef struct encore_jit_options {
  size_t size;       /* sizeof(encore_jit_options), set by encore_jit_options_init */
  int enabled;       /* 0: every call runs the callback eagerly (ENCORE_JIT=0) */
  int prune, plan;
  int allow_copyout;
  int fresh_outputs; /* replay hands out fresh copies of the outputs */
  int verify;        /* check the first N replays against eager runs (ENCORE_VERIFY=N) */
  uint32_t max_in_flight; /* replays in flight at most (default 3; 0: unbounded; at most 1024) */
  uint32_t max_units;     /* one captured unit per input signature (each input's dtype, count, device,
                             view or not; the variables passed), at most this many, the least recently
                             used dropped (default 8, 1 to 1024; 1: inputs unlike the capture's are an error) */
  int check_closure;      /* compare call 0 with call 1 at capture (default 1; see encore/jit.hpp) */
  uint32_t min_items_in_flight; /* as in encore_unit_options (default 64) */
  int concurrent;               /* as in encore_unit_options (default 0) */
  int check_access;       /* try access claims that allow pruning on call 1's data (default 1; see
                             CaptureOptions::check_access in encore/execution_unit.hpp) */
} encore_jit_options;

/* Fills the first `size` bytes of *opt with the defaults, the environment applied (ENCORE_JIT,
 * ENCORE_VERIFY), and sets opt->size: pass sizeof(encore_jit_options). */
ENCORE_C_API encore_status encore_jit_options_init(encore_jit_options* opt, size_t size);
/* The defaults with the environment applied, size set (inline: the caller's own sizeof). */
static inline encore_jit_options encore_jit_options_default(void) {
  encore_jit_options o;
  encore_jit_options_init(&o, sizeof o);
  return o;
}
/* A jit over `fn`, whose every call returns `num_outputs` (at most 1024) buffers (opt may be NULL). */
ENCORE_C_API encore_status encore_jit_create(encore_step_fn fn, void* userdata, size_t num_outputs,
                                             const encore_jit_options* opt, encore_jit* out);
/* Releases the jit, its unit and the output handles it handed out. */
ENCORE_C_API encore_status encore_jit_destroy(encore_jit jit);
/* One call: call 0 eager, call 1 eager and recorded, 2+ replay with these inputs and variables.
 * outputs (NULL to ignore; else num_outputs as created) receives handles owned by the jit, valid
 * until its next call: on replay the SAME buffers, overwritten in place (the same handle while it
 * is live; a new one where the caller destroyed it). Waits for wait_list
 * first; *done_out (may be NULL) receives the call's completion event. */
ENCORE_C_API encore_status encore_jit_call(encore_jit jit, const encore_buffer* inputs, size_t num_inputs,
                                           const encore_bound_var* vars, size_t num_vars, encore_buffer* outputs,
                                           size_t num_outputs, const encore_event* wait_list, size_t num_wait,
                                           encore_event* done_out);
/* Host bytes a call passes as a host input (e.g. this step's indices). */
typedef struct encore_host_input {
  const void* data;
  size_t bytes;
} encore_host_input;
/* encore_jit_call with host inputs: an encore_buffer_write inside the step whose source lies inside
 * hosts[k]'s bytes replays from the bytes hosts[k] names in each later call (copied while the call
 * enqueues: they may change once it returns); any other write replays the bytes seen at capture.
 * The step reaches the bytes through its userdata (the same memory as hosts[k]). Each host input's
 * size is part of the call's signature, like an input buffer's. hosts may be NULL when num_hosts is 0. */
ENCORE_C_API encore_status encore_jit_call_hosts(encore_jit jit, const encore_buffer* inputs, size_t num_inputs,
                                                 const encore_host_input* hosts, size_t num_hosts, const encore_bound_var* vars,
                                                 size_t num_vars, encore_buffer* outputs, size_t num_outputs,
                                                 const encore_event* wait_list, size_t num_wait, encore_event* done_out);
/* Completed calls so far. */
ENCORE_C_API encore_status encore_jit_calls(encore_jit jit, uint64_t* calls);
/* Drops the capture: the next call is call 0 again. */
ENCORE_C_API encore_status encore_jit_reset(encore_jit jit);
/* Drops the unit of one signature: the one a call with these inputs, host inputs (sizes only) and
 * variables would use. Its captured inputs, state buffers, outputs and temporaries are released
 * (a unit keeps them alive until it is dropped: by this, by the max_units LRU, by encore_jit_reset
 * or encore_jit_destroy); output handles the jit handed out stay valid until its next call.
 * *dropped (may be NULL) is 1 when there was such a unit, else 0. hosts may be NULL when num_hosts is 0. */
ENCORE_C_API encore_status encore_jit_drop(encore_jit jit, const encore_buffer* inputs, size_t num_inputs,
                                           const encore_host_input* hosts, size_t num_hosts, const encore_bound_var* vars,
                                           size_t num_vars, int* dropped);
/* The captured unit's stats (ENCORE_ERROR_JIT before call 2). */
ENCORE_C_API encore_status encore_jit_get_stats(encore_jit jit, encore_unit_stats* out);
/* The same for encore_unit_get_plan_stats (ENCORE_ERROR_JIT before call 2). */
ENCORE_C_API encore_status encore_jit_get_plan_stats(encore_jit jit, encore_unit_plan_stats* out);

/* ---- OpenCL interop: cl_* handles by their struct names (no OpenCL header needed) ---------- */

struct _cl_command_queue;
struct _cl_context;
struct _cl_device_id;
struct _cl_mem;
struct _cl_event;

/* A device over an engine's in-order cl_command_queue (queue, context and device are retained). */
ENCORE_C_API encore_status encore_device_adopt_queue(struct _cl_command_queue* queue, encore_device* out);
/* The device's cl_context, cl_device_id and cl_command_queue (any may be NULL; not retained). */
ENCORE_C_API encore_status encore_device_native(encore_device dev, struct _cl_context** context,
                                                struct _cl_device_id** device, struct _cl_command_queue** queue);
/* A buffer over an engine's cl_mem of at least count elements (retained, never freed by encore). */
ENCORE_C_API encore_status encore_buffer_adopt(encore_device dev, struct _cl_mem* mem, encore_dtype dtype,
                                               size_t count, encore_buffer* out);
/* The cl_mem behind a buffer (a sub-buffer for views; not retained). */
ENCORE_C_API encore_status encore_buffer_native(encore_buffer buf, struct _cl_mem** out);
/* An encore_event over an engine's cl_event of dev's context (retained until the event is destroyed). */
ENCORE_C_API encore_status encore_event_adopt(encore_device dev, struct _cl_event* event, encore_event* out);
/* The cl_event behind an event (owned by it: clRetainEvent to keep it longer); NULL when the work
 * was complete already (NULL device); an error for an event over several devices. */
ENCORE_C_API encore_status encore_event_native(encore_event ev, struct _cl_event** out);

/* Native work inside a step (an OpenCL library such as CLBlast, an engine's own kernels):
 * fn(userdata, queue, mems, n) enqueues whatever it likes on dev's queue over the buffers' cl_mems
 * (in order; a view is a sub-buffer) and returns 0, or nonzero for an error. It runs now, is recorded
 * when a capture is active, and runs again on every replay with the buffers bound then. Each buffer
 * states its access (encore_arg_in/out/inout): encore cannot see what native code does. userdata must
 * outlive every unit that recorded the call. Never pruned as one-time work. From inside fn, encore
 * calls that enqueue, record or run work, or change a unit or jit, are refused with
 * ENCORE_ERROR_JIT (see Re-entrancy at the top): fn's own work goes on `queue`. */
typedef int (*encore_native_fn)(void* userdata, struct _cl_command_queue* queue, struct _cl_mem* const* mems, size_t n);
ENCORE_C_API encore_status encore_enqueue_native(encore_device dev, encore_native_fn fn, void* userdata, const encore_arg* buffers,
                                                 size_t n, const char* name);

/* ---- steps that decide: host items, branches, loops (encore/control.hpp has the rules) ---- */

/* Valid only inside the host function or loop condition it is passed to, on that thread. */
typedef struct encore_host_ctx_t* encore_host_ctx;
/* A host item's function: reads its declared buffers' bytes (encore_host_read) and sets its
 * declared variables (encore_host_set_*); returns 0, or non-zero to stop the step with an error.
 * It runs now, and on every replay of a capture that records it (after the device work before it,
 * with one blocking read of the declared bytes): userdata must outlive every unit that recorded it.
 * Inside it, calls that enqueue, record or run work are refused with ENCORE_ERROR_JIT, as in a
 * native callback. */
typedef int (*encore_host_fn)(void* userdata, encore_host_ctx ctx);
/* A loop_while condition, run after each iteration: *again = 1 runs the body again. */
typedef int (*encore_cond_fn)(void* userdata, encore_host_ctx ctx, int* again);
/* A branch alternative or loop body: issues the step's work with the calls of this header; returns
 * 0, or non-zero for an error. At capture every alternative is traced once (its work recorded, not
 * run), so keep other host side effects out of it; on replay it is not called. */
typedef int (*encore_body_fn)(void* userdata);

/* A host item over `reads` (buffers on dev) that may set `sets` (variables used by later work of the
 * step): eagerly it runs at once; captured, it is an item. A value outside a variable's bounds is
 * ENCORE_ERROR_INVALID_ARGUMENT naming both; a variable it sets used where it may not have run (before
 * it, in another alternative) is ENCORE_ERROR_JIT at capture. */
ENCORE_C_API encore_status encore_host(encore_device dev, const encore_buffer* reads, size_t n_reads, const encore_variable* sets,
                                       size_t n_sets, encore_host_fn fn, void* userdata, const char* name);
/* `n` bytes at byte `offset` of read `r` into dst. */
ENCORE_C_API encore_status encore_host_read(encore_host_ctx ctx, size_t r, size_t offset, void* dst, size_t n);
ENCORE_C_API encore_status encore_host_read_size(encore_host_ctx ctx, size_t r, size_t* bytes);
ENCORE_C_API encore_status encore_host_set_i64(encore_host_ctx ctx, encore_variable var, int64_t value);
ENCORE_C_API encore_status encore_host_set_f64(encore_host_ctx ctx, encore_variable var, double value);
/* then_fn when the integer variable `cond` is non-zero, else else_fn (may be NULL). */
ENCORE_C_API encore_status encore_when(encore_device dev, encore_variable cond, encore_body_fn then_fn, encore_body_fn else_fn,
                                       void* userdata, const char* name);
/* alternatives[index]; index's bounds must lie in [0, n - 1] (ENCORE_ERROR_JIT at capture otherwise). */
ENCORE_C_API encore_status encore_select(encore_device dev, encore_variable index, const encore_body_fn* alternatives, size_t n,
                                         void* userdata, const char* name);
/* body `count` times (an integer variable with min >= 0). The body must do the same work every
 * iteration (ENCORE_ERROR_JIT at capture otherwise). */
ENCORE_C_API encore_status encore_repeat(encore_device dev, encore_variable count, encore_body_fn body, void* userdata, const char* name);
/* body, then cond over `reads`, again while cond says so; more than max_iterations iterations is
 * ENCORE_ERROR_INVALID_ARGUMENT naming the loop. */
ENCORE_C_API encore_status encore_loop_while(encore_device dev, int64_t max_iterations, const encore_buffer* reads, size_t n_reads,
                                             encore_body_fn body, encore_cond_fn cond, void* userdata, const char* name);

/* ---- argument helpers -------------------------------------------------------------------- */

static inline encore_arg encore_arg_buffer(encore_buffer b) { encore_arg a; a.kind = ENCORE_ARG_BUFFER; a.value.buffer = b; return a; }
static inline encore_arg encore_arg_in(encore_buffer b) { encore_arg a; a.kind = ENCORE_ARG_BUFFER_IN; a.value.buffer = b; return a; }
static inline encore_arg encore_arg_out(encore_buffer b) { encore_arg a; a.kind = ENCORE_ARG_BUFFER_OUT; a.value.buffer = b; return a; }
static inline encore_arg encore_arg_inout(encore_buffer b) { encore_arg a; a.kind = ENCORE_ARG_BUFFER_INOUT; a.value.buffer = b; return a; }
static inline encore_arg encore_arg_i32(int32_t v) { encore_arg a; a.kind = ENCORE_ARG_I32; a.value.i32 = v; return a; }
static inline encore_arg encore_arg_u32(uint32_t v) { encore_arg a; a.kind = ENCORE_ARG_U32; a.value.u32 = v; return a; }
static inline encore_arg encore_arg_i64(int64_t v) { encore_arg a; a.kind = ENCORE_ARG_I64; a.value.i64 = v; return a; }
static inline encore_arg encore_arg_u64(uint64_t v) { encore_arg a; a.kind = ENCORE_ARG_U64; a.value.u64 = v; return a; }
static inline encore_arg encore_arg_f32(float v) { encore_arg a; a.kind = ENCORE_ARG_F32; a.value.f32 = v; return a; }
static inline encore_arg encore_arg_f64(double v) { encore_arg a; a.kind = ENCORE_ARG_F64; a.value.f64 = v; return a; }
static inline encore_arg encore_arg_variable(encore_variable v) {
  encore_arg a; a.kind = ENCORE_ARG_VARIABLE; a.value.variable.var = v; a.value.variable.as = ENCORE_DTYPE_DEFAULT; return a;
}
static inline encore_arg encore_arg_variable_as(encore_variable v, encore_dtype as) {
  encore_arg a; a.kind = ENCORE_ARG_VARIABLE; a.value.variable.var = v; a.value.variable.as = as; return a;
}
static inline encore_arg encore_arg_local(size_t bytes) { encore_arg a; a.kind = ENCORE_ARG_LOCAL_BYTES; a.value.local_bytes = bytes; return a; }
/* `size` bytes at `data` for a by-value vector or struct parameter (a float4 is float[4], a float3
 * float[4]; a struct laid out as OpenCL C lays it out). The bytes are copied when the launch is made;
 * in a capture they are a constant, as any scalar (the capture check refuses one that changes),
 * unless `data` lies inside a host input of the capture: then they are per call, as below. */
static inline encore_arg encore_arg_bytes(const void* data, size_t size) {
  encore_arg a; a.kind = ENCORE_ARG_BYTES; a.value.bytes.data = data; a.value.bytes.size = size; return a;
}
/* The per-call form of a by-value struct or vector (per-frame parameters): `size` bytes at `data`,
 * which must lie inside a host input of the capture (encore_capture_add_host_input, or the hosts of
 * encore_jit_call_hosts), else ENCORE_ERROR_JIT when it is recorded. The capture records the host
 * input's slot, the byte offset and the size; every replay passes the bytes that host input holds
 * then (encore_unit_bind_host_input, or each jit call's hosts), with no allocation; the capture check
 * compares that place, not the value. The size is checked as encore_arg_bytes' is.
 *   encore_capture_add_host_input(cap, &params, sizeof params, &hslot);
 *   encore_arg args[2] = {encore_arg_buffer(x), encore_arg_bytes_from(&params, sizeof params)};
 *   ... each frame: params.dt = dt; encore_unit_run(unit, NULL, 0, NULL);   (still bound to &params) */
static inline encore_arg encore_arg_bytes_from(const void* data, size_t size) {
  encore_arg a; a.kind = ENCORE_ARG_BYTES_FROM; a.value.bytes.data = data; a.value.bytes.size = size; return a;
}
static inline encore_size encore_size_of(size_t n) { encore_size s; s.var = NULL; s.mul = 0; s.add = (int64_t)n; s.expr = NULL; return s; }
static inline encore_size encore_size_affine(encore_variable v, int64_t mul, int64_t add) {
  encore_size s; s.var = v; s.mul = mul; s.add = add; s.expr = NULL; return s;
}
static inline encore_size encore_size_of_expr(encore_size_expr e) { encore_size s; s.var = NULL; s.mul = 0; s.add = 0; s.expr = e; return s; }

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* ENCORE_ENCORE_H */
