/* mpiexec: remove a job's shared-memory objects (naming rule and the scan in
 * kumi/launch_proto.h): /dev/shm/kumi.<jobid>.* (shm_open names
 * "/kumi.<jobid>.*") and /dev/shm/sem.kumi.<jobid>.* (sem_open names) that
 * belong to mpiexec's user: a file of another user with such a name is not
 * the job's and is left alone. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"
#include "mpiexec.h"

int mx_shm_cleanup(long jobid)
{
    return kumi_launch_shm_cleanup(jobid);
}
