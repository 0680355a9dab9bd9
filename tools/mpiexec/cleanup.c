/* mpiexec: remove a job's shared-memory objects (naming rule in mpiexec.h):
 * /dev/shm/kumi.<jobid>.* (shm_open names "/kumi.<jobid>.*") and
 * /dev/shm/sem.kumi.<jobid>.* (sem_open names). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "mpiexec.h"

#define MX_SHM_DIR "/dev/shm"

int mx_shm_cleanup(long jobid)
{
    char pfx[2][64];
    size_t pl[2];
    snprintf(pfx[0], sizeof pfx[0], "kumi.%ld.", jobid);
    snprintf(pfx[1], sizeof pfx[1], "sem.kumi.%ld.", jobid);
    pl[0] = strlen(pfx[0]);
    pl[1] = strlen(pfx[1]);
    int removed = 0;
    /* Rescan until a pass removes nothing: unlinking while reading a
     * directory may make readdir skip entries. */
    for (int pass = 0; pass < 8; pass++) {
        DIR *d = opendir(MX_SHM_DIR);
        if (!d) return removed;
        int here = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            for (int k = 0; k < 2; k++)
                if (strncmp(de->d_name, pfx[k], pl[k]) == 0 && de->d_name[pl[k]]) {
                    if (unlinkat(dirfd(d), de->d_name, 0) == 0) here++;
                    break;
                }
        }
        closedir(d);
        removed += here;
        if (!here) break;
    }
    return removed;
}
