/*
 * pause.c — the application's switch: collprof_pause(), collprof_resume()
 * and collprof_paused() (declared and documented in collprof.h).
 *
 * The switch itself lives with the rest of what NCCL is asked to emit, in
 * profiling_windows.c ("Pause"): the mask goes to the off value, cp_hot.off
 * tells the callbacks to record nothing from the next GroupApi on, and the
 * change opens or closes a window in the list the summary prints.  This
 * file only exports the three entry points, which must work whether or
 * not NCCL ever loaded the plugin.
 */
#include "collprof.h"
#include "mask_control.h"

#define CP_EXPORT __attribute__((visibility("default")))

CP_EXPORT int collprof_pause(void) { return cp_mask_set_paused(1); }
CP_EXPORT int collprof_resume(void) { return cp_mask_set_paused(0); }
CP_EXPORT int collprof_paused(void) { return cp_mask_paused(); }
