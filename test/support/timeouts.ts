/**
 * CPU_BOUND_MS is how long a CPU-bound property test (thousands of builds and renders) may take: about 10 s on an idle
 * 2-core machine, three times that under load, which vitest's 30 s default does not allow (a stress run met it).
 */
export const CPU_BOUND_MS = 120_000;
