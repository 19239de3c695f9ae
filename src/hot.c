/*
 * hot.c — the one definition of cp_hot (hot.h): the flags every callback
 * reads, on a cache line of their own.
 */
#include "hot.h"

_Alignas(64) cp_hot_words cp_hot;
