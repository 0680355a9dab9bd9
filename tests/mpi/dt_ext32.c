/* MPI_Pack_external / MPI_Unpack_external in "external32": byte images
 * checked byte by byte (big-endian, MPI-defined sizes), round trips. */
#include "kt.h"
#include <wchar.h>
#include <complex.h>

static void image(MPI_Datatype t, int count, const void *val, const unsigned char *want, int n, int line)
{
    unsigned char buf[128];
    MPI_Aint pos = 0, sz;
    KT_MPI(MPI_Pack_external_size("external32", count, t, &sz));
    if (sz != n) KT_FAIL("line %d: Pack_external_size %ld, expected %d", line, (long)sz, n);
    memset(buf, 0x5a, sizeof buf);
    KT_MPI(MPI_Pack_external("external32", val, count, t, buf, sizeof buf, &pos));
    if (pos != n) KT_FAIL("line %d: position %ld, expected %d", line, (long)pos, n);
    for (int i = 0; i < n; i++)
        if (buf[i] != want[i]) KT_FAIL("line %d: byte %d is 0x%02x, expected 0x%02x", line, i, buf[i], want[i]);
    if (buf[n] != 0x5a) KT_FAIL("line %d: wrote past the image", line);
}
#define IMAGE(t, c, v, ...) do { static const unsigned char w_[] = { __VA_ARGS__ }; \
    image(t, c, v, w_, (int)sizeof w_, __LINE__); } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int i = -2; IMAGE(MPI_INT, 1, &i, 0xff, 0xff, 0xff, 0xfe);
    long l = -3; IMAGE(MPI_LONG, 1, &l, 0xff, 0xff, 0xff, 0xfd);
    unsigned long ul = 0x01020304; IMAGE(MPI_UNSIGNED_LONG, 1, &ul, 1, 2, 3, 4);
    short s[2] = { 0x0102, -1 }; IMAGE(MPI_SHORT, 2, s, 1, 2, 0xff, 0xff);
    long long ll = 0x0102030405060708LL; IMAGE(MPI_LONG_LONG, 1, &ll, 1, 2, 3, 4, 5, 6, 7, 8);
    float f = -2.0f; IMAGE(MPI_FLOAT, 1, &f, 0xc0, 0, 0, 0);
    double d = 1.0; IMAGE(MPI_DOUBLE, 1, &d, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0);
    char c[3] = "AB"; IMAGE(MPI_CHAR, 2, c, 'A', 'B');
    wchar_t wc = L'B'; IMAGE(MPI_WCHAR, 1, &wc, 0, 0x42);
    MPI_Aint ai = 258; IMAGE(MPI_AINT, 1, &ai, 0, 0, 0, 0, 0, 0, 1, 2);
    long double ld = -3.5L;
    IMAGE(MPI_LONG_DOUBLE, 1, &ld, 0xc0, 0x00, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    double _Complex z = 1.0 + 2.0 * _Complex_I;
    IMAGE(MPI_C_DOUBLE_COMPLEX, 1, &z, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0, 0, 0, 0);
    struct { double v; int i; } di = { 1.0, 7 };
    IMAGE(MPI_DOUBLE_INT, 1, &di, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7);
    int fi = 1; IMAGE(MPI_LOGICAL, 1, &fi, 0, 0, 0, 1);
    /* a derived type: two ints of every other */
    MPI_Datatype v;
    KT_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &v));
    KT_MPI(MPI_Type_commit(&v));
    int iv[3] = { 1, 99, 0x01020304 };
    IMAGE(v, 1, iv, 0, 0, 0, 1, 1, 2, 3, 4);
    /* round trips */
    {
        struct { long l; double d; long double x; short s; } in = { -123456, 3.25, -1.5e300L, -7 }, out;
        int bl[] = { 1, 1, 1, 1 };
        MPI_Aint dp[] = { 0, 8, 16, 32 };
        MPI_Datatype ty[] = { MPI_LONG, MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_SHORT }, t;
        KT_MPI(MPI_Type_create_struct(4, bl, dp, ty, &t));
        KT_MPI(MPI_Type_commit(&t));
        MPI_Aint sz, pos = 0;
        KT_MPI(MPI_Pack_external_size("external32", 1, t, &sz));
        KT_EQ_INT(sz, 4 + 8 + 16 + 2);
        unsigned char buf[64];
        KT_MPI(MPI_Pack_external("external32", &in, 1, t, buf, sizeof buf, &pos));
        memset(&out, 0, sizeof out);
        pos = 0;
        KT_MPI(MPI_Unpack_external("external32", buf, sz, &pos, &out, 1, t));
        KT_EQ_INT(pos, sz);
        KT_EQ_INT(out.l, -123456);
        KT_CHECK(out.d == 3.25);
        KT_CHECK(out.x == -1.5e300L, "long double round trip");
        KT_EQ_INT(out.s, -7);
        pos = 0;
        KT_ERRCLASS(MPI_Pack_external("external32", &in, 1, t, buf, 10, &pos), MPI_ERR_TRUNCATE);
        KT_ERRCLASS(MPI_Pack_external("native", &in, 1, t, buf, 64, &pos), MPI_ERR_ARG);
        MPI_Count csz, cpos = 0;
        KT_MPI(MPI_Pack_external_size_c("external32", 2, t, &csz));
        KT_EQ_INT(csz, 60);
        MPI_Type_free(&t);
        (void)cpos;
    }
    MPI_Type_free(&v);
    MPI_Finalize();
    return 0;
}
