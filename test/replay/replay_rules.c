/*
 * replay_rules.c — which events NCCL 2.28 emits for a given activation mask
 * (shared/docs/nccl-profiler-abi.md, "NCCL 2.28's rules"): an enabled type
 * pulls in the ancestors it needs.  The replay engine applies this per API
 * call with the mask read at that call's start, as NCCL does.
 */
#include "replay.h"

enum {
  G = ncclProfileGroup, C = ncclProfileColl, P = ncclProfileP2p,
  PO = ncclProfileProxyOp, PS = ncclProfileProxyStep, PC = ncclProfileProxyCtrl,
  KC = ncclProfileKernelCh, NP = ncclProfileNetPlugin, GA = ncclProfileGroupApi,
  CA = ncclProfileCollApi, PA = ncclProfileP2pApi, KL = ncclProfileKernelLaunch,
};

int rp_rule_keep(uint64_t type, int m) {
  const int below = PO | PS | KC | NP;   /* types that hang under a Coll or P2p */
  switch (type) {
  case GA: return (m & (GA | CA | PA | KL | G | C | P | below)) != 0;
  case CA: return (m & (CA | C | below)) != 0;
  case PA: return (m & (PA | P | below)) != 0;
  case KL: return (m & KL) != 0;
  case G:  return (m & (G | C | P | below)) != 0;
  case C:  return (m & (C | below)) != 0;
  case P:  return (m & (P | below)) != 0;
  case PO: return (m & PO) != 0;
  case PS: return (m & (PS | NP)) != 0;
  case KC: return (m & KC) != 0;
  case PC: return (m & PC) != 0;
  case NP: return (m & NP) != 0;
  default: return m != 0;   /* unknown types: only "no callback at all" at 0 */
  }
}

int rp_is_api_type(uint64_t type) {
  return type == GA || type == CA || type == PA || type == KL;
}

const char *rp_type_short(uint64_t type) {
  switch (type) {
  case G: return "Group"; case C: return "Coll"; case P: return "P2p";
  case PO: return "ProxyOp"; case PS: return "ProxyStep"; case PC: return "ProxyCtrl";
  case KC: return "KernelCh"; case NP: return "NetPlugin"; case GA: return "GroupApi";
  case CA: return "CollApi"; case PA: return "P2pApi"; case KL: return "KernelLaunch";
  default: return "Unknown";
  }
}
