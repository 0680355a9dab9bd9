/* kumi/jobkey.h: keys derived from the job secret, for the components
 * (static functions only: each component that includes it gets its own
 * copy, so a --disable-dlopen build links them side by side).
 *
 * mpiexec hands every rank KUMI_JOB_SECRET (32 hex characters); whoever
 * knows it is a member of the job.  The transports never show the secret
 * itself: they use HMAC-SHA-256 (FIPS 180-4, RFC 2104) keyed with it, over a
 * label naming the use, so that what one use reveals (a segment name in
 * /dev/shm, a proof sent over TCP) says nothing about the secret or about
 * another use.
 *
 *   kumi_jobkey_secret()        the secret's bytes (NULL without a valid one)
 *   kumi_jobkey_hmac()          HMAC-SHA-256(key, message)
 *   kumi_jobkey_derive_hex()    hex of HMAC(secret, label) truncated: names
 *   kumi_jobkey_equal()         constant-time comparison of two MACs
 *
 * Used by p2p/tcp (connection proofs) and p2p/shmem (segment and doorbell
 * names). */
#ifndef KUMI_KUMI_JOBKEY_H
#define KUMI_KUMI_JOBKEY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KUMI_JOBKEY_MAC 32                  /* bytes of an HMAC-SHA-256 */
#define KUMI_JOBKEY_SECRET_LEN 32           /* hex characters of KUMI_JOB_SECRET */

struct kumi_jobkey_sha {
    uint32_t h[8];
    uint64_t len;                          /* bytes hashed so far */
    unsigned char buf[64];
    size_t nbuf;
};

static const uint32_t kumi_jobkey_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t kumi_jobkey_ror(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static inline void kumi_jobkey_block(struct kumi_jobkey_sha *s, const unsigned char *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, h;
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = kumi_jobkey_ror(w[i - 15], 7) ^ kumi_jobkey_ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = kumi_jobkey_ror(w[i - 2], 17) ^ kumi_jobkey_ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3];
    e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (kumi_jobkey_ror(e, 6) ^ kumi_jobkey_ror(e, 11) ^ kumi_jobkey_ror(e, 25)) +
                      ((e & f) ^ (~e & g)) + kumi_jobkey_k[i] + w[i];
        uint32_t t2 = (kumi_jobkey_ror(a, 2) ^ kumi_jobkey_ror(a, 13) ^ kumi_jobkey_ror(a, 22)) +
                      ((a & b) ^ (a & c) ^ (b & c));
        h = g; g = f; f = e; e = d + t1;
        d = c; c = b; b = a; a = t1 + t2;
    }
    s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
    s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

static inline void kumi_jobkey_sha_init(struct kumi_jobkey_sha *s)
{
    static const uint32_t h0[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->nbuf = 0;
}

static inline void kumi_jobkey_sha_add(struct kumi_jobkey_sha *s, const void *data, size_t n)
{
    const unsigned char *p = data;
    s->len += n;
    while (n > 0) {
        size_t k = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, k);
        s->nbuf += k;
        p += k;
        n -= k;
        if (s->nbuf == 64) {
            kumi_jobkey_block(s, s->buf);
            s->nbuf = 0;
        }
    }
}

static inline void kumi_jobkey_sha_end(struct kumi_jobkey_sha *s, unsigned char out[KUMI_JOBKEY_MAC])
{
    uint64_t bits = s->len * 8;
    unsigned char pad = 0x80, zero = 0, lenbe[8];
    kumi_jobkey_sha_add(s, &pad, 1);
    while (s->nbuf != 56) kumi_jobkey_sha_add(s, &zero, 1);
    for (int i = 0; i < 8; i++) lenbe[i] = (unsigned char)(bits >> (56 - 8 * i));
    kumi_jobkey_sha_add(s, lenbe, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)s->h[i];
    }
}

/* HMAC-SHA-256 of the concatenation of parts[0..nparts) under key. */
static inline void kumi_jobkey_hmac(const void *key, size_t keylen, const void *const *parts,
                            const size_t *lens, int nparts, unsigned char out[KUMI_JOBKEY_MAC])
{
    unsigned char k[64], pad[64], inner[KUMI_JOBKEY_MAC];
    struct kumi_jobkey_sha s;
    memset(k, 0, sizeof k);
    if (keylen > 64) {
        kumi_jobkey_sha_init(&s);
        kumi_jobkey_sha_add(&s, key, keylen);
        kumi_jobkey_sha_end(&s, k);
    } else if (keylen) {
        memcpy(k, key, keylen);
    }
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x36;
    kumi_jobkey_sha_init(&s);
    kumi_jobkey_sha_add(&s, pad, 64);
    for (int i = 0; i < nparts; i++) kumi_jobkey_sha_add(&s, parts[i], lens[i]);
    kumi_jobkey_sha_end(&s, inner);
    for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x5c;
    kumi_jobkey_sha_init(&s);
    kumi_jobkey_sha_add(&s, pad, 64);
    kumi_jobkey_sha_add(&s, inner, sizeof inner);
    kumi_jobkey_sha_end(&s, out);
    memset(k, 0, sizeof k);
    memset(pad, 0, sizeof pad);
}

/* The job secret as given to this rank (NULL if missing or malformed). */
static inline const char *kumi_jobkey_secret(void)
{
    const char *s = getenv("KUMI_JOB_SECRET");
    if (!s || strlen(s) != KUMI_JOBKEY_SECRET_LEN) return NULL;
    return s;
}

/* hexlen hex characters (at most 64) of HMAC(secret, label) into out
 * (hexlen + 1 bytes).  Returns -1 without a secret. */
static inline int kumi_jobkey_derive_hex(const char *label, char *out, size_t hexlen)
{
    const char *sec = kumi_jobkey_secret();
    unsigned char mac[KUMI_JOBKEY_MAC];
    const void *parts[1] = { label };
    size_t lens[1] = { strlen(label) };
    if (!sec || hexlen > 2 * KUMI_JOBKEY_MAC) return -1;
    kumi_jobkey_hmac(sec, strlen(sec), parts, lens, 1, mac);
    for (size_t i = 0; i < hexlen; i++)
        out[i] = "0123456789abcdef"[(mac[i / 2] >> (i % 2 ? 0 : 4)) & 15];
    out[hexlen] = 0;
    return 0;
}

static inline int kumi_jobkey_equal(const unsigned char *a, const unsigned char *b, size_t n)
{
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++) d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

#endif
