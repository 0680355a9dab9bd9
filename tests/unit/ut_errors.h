/* ut_errors.h: an error code's message and class, for unit tests that check
 * what the library reports (include after the framework headers). */
#ifndef KUMI_UT_ERRORS_H
#define KUMI_UT_ERRORS_H
#include "core/core.h"

static const char *msg(int code)
{
    static char buf[MPI_MAX_ERROR_STRING];
    int len = 0;
    buf[0] = '\0';
    kumi_mpi_error_string(code, buf, &len);
    return buf;
}

static int cls(int code)
{
    int c = -1;
    kumi_mpi_error_class(code, &c);
    return c;
}
#endif
