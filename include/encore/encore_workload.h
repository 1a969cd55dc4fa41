/* encore C API, saved units: a captured step written to a workload file together with its programs'
 * device binaries, and loaded in a later process as a unit that replays at its first call, with no
 * compile and no warm-up call (the C form of encore::workload::save_workload and load_unit,
 * encore/workload.hpp; the file format: docs/workload-format.md). Engines load their frame this way
 * at start-up:
 *
 *   // once, after capturing the frame (encore_capture_end or a jit's unit):
 *   encore_unit_save(frame, "frame.json", NULL);           // frame.json + frame.data/
 *   // at start-up, in a new process:
 *   encore_unit frame;  encore_buffer x, out;  size_t compiled;
 *   if (encore_unit_load(dev, "frame.json", NULL, &frame, &compiled) != ENCORE_OK) { puts(encore_last_error()); return 1; }
 *   encore_unit_buffer(frame, "x", &x);                     // the file's buffers, by their names
 *   encore_unit_buffer(frame, "out", &out);
 *   for (;;) {
 *     encore_buffer_copyin(x, input, nbytes);               // or encore_unit_bind_input(frame, 0, other)
 *     encore_unit_run(frame, NULL, 0, NULL);                // the first call is a replay already
 *     encore_buffer_copyout(out, host, nbytes);
 *   }
 *   encore_buffer_destroy(out); encore_buffer_destroy(x); encore_unit_destroy(frame);
 *
 * The loaded unit is an ordinary encore_unit: input slot k is bound to the file's k-th input buffer
 * (holding the saved bytes; encore_unit_bind_input binds another), its variables keep their saved
 * values until bound (encore_unit_bind_var_*), and every encore_unit_* call works on it.
 * encore_unit_buffer (encore.h) hands out its buffers by the names the file gives them: the inputs,
 * the state and const buffers its items use, and the outputs, which each run writes in place
 * (the names come from encore_buffer_set_name at capture; unnamed buffers are "b0", "b1", ...,
 * see the saved file). Temporaries belong to the unit.
 *
 * In libencore_workload (pkg-config encore-workload), not libencore: link it, Boost.ProgramOptions
 * and libencore, with a C++ linker (it is a static C++ library). Failures follow encore.h: a status,
 * and encore_last_error() saying what was expected and what was found. A file that cannot be read or
 * written, is not a valid workload, or holds what a loaded unit cannot (per-call bytes of a host
 * input, shape sets) is ENCORE_ERROR_WORKLOAD naming the file's JSON path of the problem; nothing is
 * made and *out is NULL.
 */
#ifndef ENCORE_ENCORE_WORKLOAD_H
#define ENCORE_ENCORE_WORKLOAD_H

#include "encore/encore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes `unit` to `path` (a .json file) and its data to the folder beside it (PATH's stem + ".data":
 * each buffer's current bytes, each program's device binary with its key: device, driver, OpenCL
 * version, build options and source). `name` is the workload's name (NULL or "": the file's stem).
 * What the format cannot hold (host items, branches and loops; scalar types other than
 * i32/u32/i64/u64/f32/f64; ...) is ENCORE_ERROR_WORKLOAD naming the item. Waits for the unit's work
 * first. */
ENCORE_C_API encore_status encore_unit_save(encore_unit unit, const char* path, const char* name);

/* Loads a file encore_unit_save wrote as a unit on `dev` (opt may be NULL: the defaults; its
 * allow_copyout is ignored: a loaded unit is recorded without running). A program whose saved binary
 * does not fit `dev` (another device or driver, edited options or source, a damaged or missing
 * binary file) is compiled from source instead, never used; ENCORE_DEBUG=1 says why. *compiled
 * (may be NULL) receives how many programs were not built from their saved binary: compiled from
 * source (or taken from the program cache), or, where this process holds the same program already
 * (a unit loaded twice, the capture's program still alive), that one reused. 0 when every binary was
 * used, and on the NULL device, which builds nothing. On failure *out is NULL and nothing is made. */
ENCORE_C_API encore_status encore_unit_load(encore_device dev, const char* path, const encore_unit_options* opt, encore_unit* out,
                                            size_t* compiled);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* ENCORE_ENCORE_WORKLOAD_H */
