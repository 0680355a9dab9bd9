/* A program built with Open MPI's mpicc that dlopens a plug-in built with
 * MPICH's (libmixplug.so, argv[1]): both call MPI_Get_library_version (it may
 * be called before MPI_Init).  Prints what each reaches, before and after
 * kumi_got_swap points the plug-in at libmpich.so.12's. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "kumi_gotswap.h"

static char buf[16384];

static const char *first_line(void)
{
    buf[strcspn(buf, "\n")] = 0;
    return buf;
}

int main(int argc, char **argv)
{
    int len;
    if (argc < 2) return 2;
    MPI_Get_library_version(buf, &len);
    printf("program: %s\n", first_line());
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
    int (*pl)(char *, int *) = (int (*)(char *, int *))dlsym(h, "plug_libver");
    pl(buf, &len);
    printf("plug-in before: %s\n", first_line());
    void *hm = dlopen("libmpich.so.12", RTLD_NOW | RTLD_NOLOAD);
    void *t = hm ? dlsym(hm, "MPI_Get_library_version") : NULL;
    if (!t) { printf("libmpich.so.12 is not loaded: %s\n", dlerror()); return 1; }
    int n = kumi_got_swap("libmixplug.so", "MPI_Get_library_version", t, NULL);
    printf("swapped: %d %s\n", n, n < 0 ? kumi_got_error() : "");
    pl(buf, &len);
    printf("plug-in after: %s\n", first_line());
    MPI_Get_library_version(buf, &len);
    printf("program after: %s\n", first_line());
    return 0;
}
