#pragma once
// The CPU's hint for a thread that polls a flag another thread sets (x86 PAUSE, Arm YIELD):
// the poll costs its sibling hyperthread and the memory system less, and the loop leaves it
// sooner once the flag changes. On other CPUs it does nothing.

namespace crosslab::util {

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace crosslab::util
