/*
 * hot.c — the one definition of cp_hot (hot.h): the flags every callback
 * reads, on a cache line of their own.
 */
#include "hot.h"

/* clock.c's map that no reading fits, so the inline clock read needs no
 * NULL test before calibration. */
extern struct cp_clock_map cp_clock_none;
_Alignas(64) cp_hot_words cp_hot = {.clock_cur = &cp_clock_none};
