/* The bare-map limit in C: the loop `trimlab bench` sets its own (Rust) limit loop against,
 * built with `cc -O2` and run in the same bench (crates/jobs/src/bench/limit.rs).
 *
 * MODE map (the limit): per page written, what a page-mapping FTL cannot avoid: one xorshift64
 * step, a logical page masked to the forward map's power-of-two size, the forward map's entry
 * swapped for the next physical page, the old physical page invalidated in the backward map
 * and the new one recorded there (the physical log wraps). MODE store: one u32 store of the
 * write counter at the random index and nothing else, the memory system's own ceiling.
 * Both maps are filled before the clock starts, so no page fault is timed.
 *
 * Usage: limit MODE FORWARD_LOG2 PHYSICAL_PAGES WRITES SEED
 * Prints "<writes per second> <checksum>"; the checksum (the maps' entries summed, wrapping)
 * equals the Rust loop's for the same arguments, so both did the same work. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NONE UINT32_MAX

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 6 || (strcmp(argv[1], "map") != 0 && strcmp(argv[1], "store") != 0)) {
        fprintf(stderr, "usage: %s map|store FORWARD_LOG2 PHYSICAL_PAGES WRITES SEED\n", argv[0]);
        return 2;
    }
    int store_only = strcmp(argv[1], "store") == 0;
    int bits = atoi(argv[2]);
    uint64_t physical = strtoull(argv[3], NULL, 10);
    uint64_t writes = strtoull(argv[4], NULL, 10);
    uint64_t x = strtoull(argv[5], NULL, 10) | 1; /* xorshift64's state must not be 0 */
    if (bits < 1 || bits > 31 || physical < 1 || physical >= NONE) {
        fprintf(stderr, "limit: FORWARD_LOG2 = %s (must be 1..=31), PHYSICAL_PAGES = %s (must be 1..2^32-1)\n",
                argv[2], argv[3]);
        return 2;
    }
    size_t logical = (size_t)1 << bits;
    uint64_t mask = logical - 1;
    uint32_t *forward = malloc(logical * sizeof *forward);
    uint32_t *backward = malloc(physical * sizeof *backward);
    if (!forward || !backward) {
        fprintf(stderr, "limit: cannot allocate the maps\n");
        return 1;
    }
    memset(forward, 0xff, logical * sizeof *forward);
    memset(backward, 0xff, physical * sizeof *backward);
    uint32_t next = 0;
    double start = now_s();
    if (store_only) {
        for (uint64_t i = 0; i < writes; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            forward[x & mask] = (uint32_t)i;
        }
    } else {
        for (uint64_t i = 0; i < writes; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint32_t lpn = (uint32_t)(x & mask);
            uint32_t old = forward[lpn];
            forward[lpn] = next;
            if (old != NONE)
                backward[old] = NONE;
            backward[next] = lpn;
            next = next + 1 == physical ? 0 : next + 1;
        }
    }
    double seconds = now_s() - start;
    uint64_t sum = 0;
    for (size_t i = 0; i < logical; i++)
        sum += forward[i];
    for (size_t i = 0; i < physical; i++)
        sum += backward[i];
    printf("%.0f %llu\n", (double)writes / seconds, (unsigned long long)sum);
    free(forward);
    free(backward);
    return 0;
}
