/* SPDX-License-Identifier: Apache-2.0 */
/* isolate.h - what the readers that run third-party parsers in a child process share
 * (import_isolated.c for assimp, vdb_isolated.c for OpenVDB): a parser that loops, crashes or
 * balloons on a hostile file costs the caller an error, not a hang, a crash or its memory.
 *
 * The scheme: fork; the child lowers its address-space limit to its size at the fork plus a budget
 * (vx_isolate_limit_memory), parses, and writes one answer to a pipe (vx_isolate_write); the
 * parent reads it with a deadline (vx_isolate_read), checks every byte, and reaps the child
 * (vx_isolate_reap), which tells a time-out, an interrupt, a crash and a child that died near its
 * memory budget apart.
 */
#ifndef VOXLOD_FORMATS_ISOLATE_H
#define VOXLOD_FORMATS_ISOLATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "sys/error.h"
#include "sys/alloc.h"

VX_EXTERN_C_BEGIN

/* The budget of a child: what the whole process may still use (mem_limit less the parent's
 * resident bytes now), at least min_budget. */
uint64_t vx_isolate_budget(uint64_t mem_limit, uint64_t min_budget);

/* In the child: caps the address space at its size now plus budget (never raises a cap). Returns
 * the size it started from (0 when unknown: no cap). */
uint64_t vx_isolate_limit_memory(uint64_t budget);

/* In the child: how far the address space grew beyond `start` (its peak, VmPeak), for the parent
 * to tell a parser that failed near its budget from one that failed for another reason. */
uint64_t vx_isolate_growth(uint64_t start);

/* Forks a child joined to this process by a pipe. In the parent: returns the child's pid and *fd
 * is the pipe's read end. In the child: returns 0, *fd is the write end, and SIGINT, SIGTERM and
 * SIGPIPE act by default (Ctrl-C reaches the whole process group: the child stops at once and the
 * parent reports it). On failure: -1 with err set ("cannot start <what>: ..."). */
pid_t vx_isolate_fork(int *fd, const char *what, vx_error *err);

/* Writes n bytes (0 on success). */
int vx_isolate_write(int fd, const void *p, size_t n);

/* Reads n bytes before the deadline (a vx_clock_seconds time; 0: none): 0 done, 1 time out, 2 end
 * of pipe or error. */
int vx_isolate_read(int fd, void *p, size_t n, double deadline);

/* How a child ended. */
typedef enum vx_isolate_end {
  VX_ISOLATE_EXITED,      /* it exited (the answer, if any, says how it went) */
  VX_ISOLATE_INTERRUPTED, /* SIGINT or SIGTERM */
  VX_ISOLATE_NEAR_LIMIT,  /* died or failed after growing by half its budget or more: out of
                             memory */
  VX_ISOLATE_CRASHED      /* died on another signal */
} vx_isolate_end;

/* Reaps the child (killing it first when kill_first); *sig gets the signal that ended it. rss0:
 * the parent's resident bytes when it forked; budget: the child's. */
vx_isolate_end vx_isolate_reap(pid_t pid, int kill_first, uint64_t rss0, uint64_t budget,
                               int *sig);

VX_EXTERN_C_END

#endif
