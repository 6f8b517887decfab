#pragma once
// OpenMP's wait policy for serving. libgomp's default lets an idle worker spin for a while
// before it sleeps. In a server the decode step's worker then spins through every gap between
// steps, on a core that the HTTP threads need for the tokens just emitted: on the 2-core VM,
// `crosslab-cli serve` + `crosslab-cli bench` on the demo model at 16 streams served 6.2-9.1k
// tok/s spinning and 10.0-15.4k with OMP_WAIT_POLICY=PASSIVE (workers sleep at once; a
// batch-1 decode of a 1B model, ~100 parallel regions a token, pays ~10% for it, so this is for
// servers only). libgomp reads the variable when it is loaded, before main(): a program that
// wants it re-executes itself with it set. A value the user set is kept.
namespace crosslab::util {

// If OMP_WAIT_POLICY is unset: sets it to PASSIVE and replaces the process by a fresh run of
// the same executable with the same arguments (same pid, open descriptors kept). Returns only
// when nothing was to be done or the exec failed (then the program runs as it is).
void reexecWithPassiveOpenMpWaits(char** argv);

}  // namespace crosslab::util
