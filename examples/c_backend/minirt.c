/*
 * minirt: a tiny back end for refinterp's golden suites, in C99 (libc and libm only).
 *
 *     minirt [--float32] OPERATOR INPUTS.npz OUTPUTS.npz
 *
 * It reads the case's inputs (x, and y for a binary operator) from INPUTS.npz, applies ONE
 * element-wise SkriptND operator and writes the output (z for a binary operator, y for a
 * unary one) to OUTPUTS.npz, in exactly the bytes refinterp itself writes (docs/golden.md,
 * "Arrays: the bytes"). The point is to show that a golden suite is readable from any
 * language with nothing but a zip reader (here: 60 lines) and the `.npy` header.
 *
 * Operators: math.add math.sub math.mul math.div (equal shapes only: no broadcasting),
 * math.neg math.abs math.exp math.log math.sqrt math.sin math.cos math.tanh, nn.relu
 * (without attributes); real inputs only. With --float32 it computes in single precision
 * and writes `<f4` outputs (the harness accepts a float32 result on values).
 *
 * Exit status: 0 the outputs are written; 77 the case is unsupported (the reason on stderr:
 * the harness records a skip); 2 anything else (unreadable input, usage): a failure.
 */

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_UNSUPPORTED 77
#define EXIT_FAILURE_ 2
#define MAX_RANK 32
#define MAX_ARRAYS 16
#define ZIP64_LIMIT 0x7FFFFFFFu /* Python's zipfile switches to ZIP64 beyond this */

/* ------------------------------------------------------------------ errors */

static const char *program = "minirt";

static void die(int status, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "%s: ", program);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    exit(status);
}

#define unsupported(...) die(EXIT_UNSUPPORTED, __VA_ARGS__)
#define fail(...) die(EXIT_FAILURE_, __VA_ARGS__)

static void *checked_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        fail("out of memory (%zu bytes)", size);
    return p;
}

/* ------------------------------------------------------------------ little-endian bytes */

static uint32_t get16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

static uint32_t get32(const unsigned char *p) { return get16(p) | get16(p + 2) << 16; }

static uint64_t get64(const unsigned char *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

static void put16(unsigned char *p, uint32_t v) { p[0] = v & 0xFF; p[1] = (v >> 8) & 0xFF; }

static void put32(unsigned char *p, uint32_t v) { put16(p, v & 0xFFFF); put16(p + 2, v >> 16); }

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* An IEEE double or float from / to its little-endian bytes, whatever the host's byte order. */
static double get_f8(const unsigned char *p)
{
    uint64_t bits = get64(p);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* Every NaN is written as the one quiet NaN 0x7ff8000000000000, as refinterp writes it
 * (docs/golden.md, "Arrays: the bytes"): a NaN's sign depends on the order of operations. */
static void put_f8(unsigned char *p, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    put64(p, d != d ? UINT64_C(0x7ff8000000000000) : bits);
}

static void put_f4(unsigned char *p, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    put32(p, bits);
}

/* ------------------------------------------------------------------ CRC-32 (zip's) */

/* The reflected CRC-32 of zip, gzip and PNG: polynomial 0xEDB88320, initial value and final
 * XOR 0xFFFFFFFF. */
static uint32_t crc32_of(const unsigned char *data, size_t size)
{
    static uint32_t table[256];
    static int ready = 0;
    if (!ready) {
        for (uint32_t n = 0; n < 256; n++) {
            uint32_t c = n;
            for (int k = 0; k < 8; k++)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[n] = c;
        }
        ready = 1;
    }
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < size; i++)
        crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

/* ------------------------------------------------------------------ arrays */

typedef struct {
    char key[256];                 /* the member name without ".npy" */
    char descr[8];                 /* "<f8", "<i8", "|b1" (what refinterp writes), "<f4" */
    int rank;
    uint64_t shape[MAX_RANK];
    uint64_t count;                /* number of elements */
    const unsigned char *data;     /* count * itemsize bytes, little-endian, C order */
} Array;

static uint64_t element_count(const uint64_t *shape, int rank)
{
    uint64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] != 0 && n > UINT64_MAX / shape[i])
            fail("array too large");
        n *= shape[i];
    }
    return n;
}

/* ------------------------------------------------------------------ reading .npy */

/* The text after `'key':` in the header dictionary, or NULL. */
static const char *header_value(const char *header, const char *key)
{
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s':", key);
    const char *p = strstr(header, quoted);
    if (!p)
        return NULL;
    p += strlen(quoted);
    while (*p == ' ')
        p++;
    return p;
}

/* Parse a `.npy` member (format 1.0): the magic "\x93NUMPY", version 1 0, the header length
 * (uint16 LE), the header `{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }`,
 * then the elements in C order. */
static void parse_npy(Array *a, const unsigned char *bytes, uint64_t size)
{
    if (size < 10 || memcmp(bytes, "\x93NUMPY", 6) != 0)
        fail("member '%s.npy' is no .npy array (bad magic)", a->key);
    if (bytes[6] != 1 || bytes[7] != 0)
        unsupported("member '%s.npy': .npy format version %d.%d (only 1.0 is read)",
                    a->key, bytes[6], bytes[7]);
    uint32_t header_length = get16(bytes + 8);
    if (10 + (uint64_t)header_length > size)
        fail("member '%s.npy': truncated header", a->key);
    char *header = checked_malloc(header_length + 1);
    memcpy(header, bytes + 10, header_length);
    header[header_length] = '\0';

    const char *descr = header_value(header, "descr");
    const char *fortran = header_value(header, "fortran_order");
    const char *shape = header_value(header, "shape");
    if (!descr || !fortran || !shape || *descr != '\'' || *shape != '(')
        fail("member '%s.npy': cannot parse the header %s", a->key, header);
    size_t n = strcspn(descr + 1, "'");
    if (n >= sizeof a->descr)
        unsupported("member '%s.npy': dtype %.*s", a->key, (int)n, descr + 1);
    memcpy(a->descr, descr + 1, n);
    a->descr[n] = '\0';
    if (strncmp(fortran, "False", 5) != 0)
        unsupported("member '%s.npy': fortran_order arrays are not read", a->key);

    /* "()", "(7,)", "(3, 4)" */
    a->rank = 0;
    const char *p = shape + 1;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            break;
        if (*p < '0' || *p > '9')
            fail("member '%s.npy': cannot parse the shape in %s", a->key, header);
        if (a->rank == MAX_RANK)
            unsupported("member '%s.npy': rank above %d", a->key, MAX_RANK);
        char *end;
        a->shape[a->rank++] = strtoull(p, &end, 10);
        p = end;
    }
    free(header);

    a->count = element_count(a->shape, a->rank);
    uint64_t itemsize = strcmp(a->descr, "|b1") == 0                                  ? 1
                        : strcmp(a->descr, "<f4") == 0                                ? 4
                        : strcmp(a->descr, "<f8") == 0 || strcmp(a->descr, "<i8") == 0 ? 8
                                                                                       : 0;
    if (itemsize == 0)
        unsupported("member '%s.npy': dtype %s", a->key, a->descr);
    uint64_t offset = 10 + (uint64_t)header_length;
    if (a->count > (size - offset) / itemsize || size - offset != a->count * itemsize)
        fail("member '%s.npy': %llu data bytes for %llu elements of %s", a->key,
             (unsigned long long)(size - offset), (unsigned long long)a->count, a->descr);
    a->data = bytes + offset;
}

/* ------------------------------------------------------------------ reading .npz (zip) */

static unsigned char *read_file(const char *path, uint64_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail("cannot open '%s'", path);
    size_t capacity = 1 << 16, used = 0, got;
    unsigned char *buffer = checked_malloc(capacity);
    while ((got = fread(buffer + used, 1, capacity - used, f)) > 0) {
        used += got;
        if (used == capacity) {
            capacity *= 2;
            buffer = realloc(buffer, capacity);
            if (!buffer)
                fail("out of memory reading '%s'", path);
        }
    }
    if (ferror(f))
        fail("cannot read '%s'", path);
    fclose(f);
    *size = used;
    return buffer;
}

/* Read every `<key>.npy` member of a zip archive: find the end-of-central-directory record,
 * walk the central directory, and for each entry jump to its local header, whose own name and
 * extra-field lengths give where the data starts. Members must be stored (method 0). */
static int read_npz(const char *path, Array *arrays, unsigned char **keep)
{
    uint64_t size;
    unsigned char *zip = read_file(path, &size);
    *keep = zip;

    /* The end record (22 bytes + a comment of up to 65535 bytes) is at the end. */
    int64_t end = -1;
    for (int64_t at = (int64_t)size - 22; at >= 0 && at >= (int64_t)size - 22 - 65535; at--)
        if (get32(zip + at) == 0x06054b50u) {
            end = at;
            break;
        }
    if (end < 0)
        fail("'%s' is no zip archive (no end-of-central-directory record)", path);
    uint32_t entries = get16(zip + end + 10);
    uint32_t directory = get32(zip + end + 16);
    if (directory == 0xFFFFFFFFu || entries == 0xFFFFu)
        unsupported("'%s' is a ZIP64 archive", path);
    if (entries > MAX_ARRAYS)
        unsupported("'%s' holds %u arrays (at most %d are read)", path, entries, MAX_ARRAYS);

    uint64_t at = directory;
    for (uint32_t i = 0; i < entries; i++) {
        if (at + 46 > size || get32(zip + at) != 0x02014b50u ||
            at + 46 + get16(zip + at + 28) > size)
            fail("'%s': damaged central directory", path);
        const unsigned char *entry = zip + at;
        uint32_t method = get16(entry + 10), crc = get32(entry + 16);
        uint64_t stored = get32(entry + 20), length = get32(entry + 24);
        uint32_t name_length = get16(entry + 28), extra_length = get16(entry + 30),
                 comment_length = get16(entry + 32);
        uint64_t local = get32(entry + 42);
        const char *name = (const char *)entry + 46;
        at += 46 + (uint64_t)name_length + extra_length + comment_length;

        Array *a = &arrays[i];
        if (name_length < 5 || name_length - 4 >= sizeof a->key ||
            memcmp(name + name_length - 4, ".npy", 4) != 0)
            fail("'%s': member '%.*s' is no .npy file", path, (int)name_length, name);
        memcpy(a->key, name, name_length - 4);
        a->key[name_length - 4] = '\0';
        if (method != 0)
            unsupported("'%s': member '%s.npy' is compressed (method %u); only stored "
                        "members are read", path, a->key, method);
        if (stored == 0xFFFFFFFFu || length == 0xFFFFFFFFu || local == 0xFFFFFFFFu)
            unsupported("'%s': member '%s.npy' uses ZIP64", path, a->key);
        if (local + 30 > size || get32(zip + local) != 0x04034b50u)
            fail("'%s': damaged local header of '%s.npy'", path, a->key);
        uint64_t data = local + 30 + get16(zip + local + 26) + get16(zip + local + 28);
        if (data + length > size)
            fail("'%s': member '%s.npy' is truncated", path, a->key);
        if (crc32_of(zip + data, length) != crc)
            fail("'%s': member '%s.npy' fails its CRC-32", path, a->key);
        parse_npy(a, zip + data, length);
    }
    return (int)entries;
}

/* ------------------------------------------------------------------ writing .npz */

typedef struct {
    unsigned char *bytes;
    size_t size, capacity;
} Buffer;

static void append(Buffer *b, const void *data, size_t size)
{
    if (b->size + size > b->capacity) {
        while (b->size + size > b->capacity)
            b->capacity = b->capacity ? 2 * b->capacity : 4096;
        b->bytes = realloc(b->bytes, b->capacity);
        if (!b->bytes)
            fail("out of memory");
    }
    memcpy(b->bytes + b->size, data, size);
    b->size += size;
}

/* The `.npy` 1.0 bytes of an array, as numpy.save and refinterp.io.encode_npy write them. */
static void encode_npy(Buffer *out, const Array *a)
{
    char shape[MAX_RANK * 24 + 4], header[MAX_RANK * 24 + 128];
    size_t n = 0;
    shape[n++] = '(';
    for (int i = 0; i < a->rank; i++)
        n += (size_t)sprintf(shape + n, i ? ", %llu" : "%llu", (unsigned long long)a->shape[i]);
    if (a->rank == 1)
        shape[n++] = ',';            /* Python's one-element tuple: (7,) */
    shape[n++] = ')';
    shape[n] = '\0';
    int length = sprintf(header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                         a->descr, shape);
    /* Spaces, then '\n', so that the data starts at a multiple of 64 bytes. */
    int padding = (64 - (10 + length + 1) % 64) % 64;
    memset(header + length, ' ', (size_t)padding);
    header[length + padding] = '\n';
    length += padding + 1;

    unsigned char prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    put16(prefix + 8, (uint32_t)length);
    append(out, prefix, sizeof prefix);
    append(out, header, (size_t)length);
    size_t itemsize = strcmp(a->descr, "<f4") == 0 ? 4 : 8;
    append(out, a->data, (size_t)a->count * itemsize);
}

/* A zip archive of stored members, laid out as Python's zipfile writes it for
 * refinterp.io.encode_npz: per member a local header (version needed 2.0, no flags, method 0,
 * time 00:00:00, date 1980-01-01, CRC-32, sizes, name, no extra field) and the bytes; then the
 * central directory (made by Unix / 2.0, external attributes 0644 << 16) and the end record. */
static void write_npz(const char *path, const Array *arrays, int count)
{
    Buffer zip = {0}, directory = {0};
    for (int i = 0; i < count; i++) {
        Buffer member = {0};
        encode_npy(&member, &arrays[i]);
        char name[sizeof arrays[i].key + 4];
        size_t name_length = (size_t)sprintf(name, "%s.npy", arrays[i].key);
        uint32_t crc = crc32_of(member.bytes, member.size);
        uint64_t offset = zip.size;
        /* Python's zipfile gives a member a ZIP64 header from 1.05 * size > ZIP64_LIMIT on */
        if ((double)member.size * 1.05 > ZIP64_LIMIT || offset > ZIP64_LIMIT)
            unsupported("outputs of 2 GiB or more (ZIP64) are not written");

        unsigned char local[30] = {0};
        put32(local, 0x04034b50u);          /* local file header signature */
        put16(local + 4, 20);               /* version needed to extract: 2.0 */
        put16(local + 6, 0);                /* flags */
        put16(local + 8, 0);                /* method: stored */
        put16(local + 10, 0);               /* time 00:00:00 */
        put16(local + 12, (1 << 5) | 1);    /* date 1980-01-01: (year-1980)<<9 | month<<5 | day */
        put32(local + 14, crc);
        put32(local + 18, (uint32_t)member.size); /* compressed size */
        put32(local + 22, (uint32_t)member.size); /* uncompressed size */
        put16(local + 26, (uint32_t)name_length);
        put16(local + 28, 0);               /* extra field length */
        append(&zip, local, sizeof local);
        append(&zip, name, name_length);
        append(&zip, member.bytes, member.size);

        unsigned char central[46] = {0};
        put32(central, 0x02014b50u);        /* central directory header signature */
        central[4] = 20;                    /* made by: version 2.0 ... */
        central[5] = 3;                     /* ... on Unix */
        put16(central + 6, 20);             /* version needed to extract */
        put16(central + 8, 0);              /* flags */
        put16(central + 10, 0);             /* method: stored */
        put16(central + 12, 0);             /* time */
        put16(central + 14, (1 << 5) | 1);  /* date */
        put32(central + 16, crc);
        put32(central + 20, (uint32_t)member.size);
        put32(central + 24, (uint32_t)member.size);
        put16(central + 28, (uint32_t)name_length);
        put16(central + 30, 0);             /* extra field length */
        put16(central + 32, 0);             /* comment length */
        put16(central + 34, 0);             /* disk number */
        put16(central + 36, 0);             /* internal attributes */
        put32(central + 38, 0644u << 16);   /* external attributes: Unix permissions rw-r--r-- */
        put32(central + 42, (uint32_t)offset);
        append(&directory, central, sizeof central);
        append(&directory, name, name_length);
        free(member.bytes);
    }
    uint64_t start = zip.size;
    if (start > ZIP64_LIMIT || directory.size > ZIP64_LIMIT)
        unsupported("outputs of 2 GiB or more (ZIP64) are not written");
    append(&zip, directory.bytes, directory.size);
    unsigned char end[22] = {0};
    put32(end, 0x06054b50u);                /* end of central directory signature */
    put16(end + 8, (uint32_t)count);        /* entries on this disk */
    put16(end + 10, (uint32_t)count);       /* entries in all */
    put32(end + 12, (uint32_t)directory.size);
    put32(end + 16, (uint32_t)start);
    append(&zip, end, sizeof end);          /* no comment */

    FILE *f = fopen(path, "wb");
    if (!f)
        fail("cannot write '%s'", path);
    if (fwrite(zip.bytes, 1, zip.size, f) != zip.size || fclose(f) != 0) {
        remove(path);
        fail("cannot write '%s'", path);
    }
    free(zip.bytes);
    free(directory.bytes);
}

/* ------------------------------------------------------------------ the operators */

typedef double (*Unary)(double);
typedef double (*Binary)(double, double);
typedef float (*UnaryF)(float);
typedef float (*BinaryF)(float, float);

static double add(double x, double y) { return x + y; }
static double sub(double x, double y) { return x - y; }
static double mul(double x, double y) { return x * y; }
static double divide(double x, double y) { return x / y; }
static double neg(double x) { return -x; }
/* max(x, 0) that propagates NaN and keeps -0.0, like refinterp's `x >> 0.0` */
static double relu(double x) { return x < 0.0 ? 0.0 : x; }

static float addf(float x, float y) { return x + y; }
static float subf(float x, float y) { return x - y; }
static float mulf(float x, float y) { return x * y; }
static float dividef(float x, float y) { return x / y; }
static float negf(float x) { return -x; }
static float reluf(float x) { return x < 0.0f ? 0.0f : x; }

typedef struct {
    const char *name;
    Unary unary;        /* one of unary / binary is set */
    Binary binary;
    UnaryF unary_f;
    BinaryF binary_f;
} Operator;

static const Operator OPERATORS[] = {
    {"math.add", NULL, add, NULL, addf},
    {"math.sub", NULL, sub, NULL, subf},
    {"math.mul", NULL, mul, NULL, mulf},
    {"math.div", NULL, divide, NULL, dividef},
    {"math.neg", neg, NULL, negf, NULL},
    {"math.abs", fabs, NULL, fabsf, NULL},
    {"math.exp", exp, NULL, expf, NULL},
    {"math.log", log, NULL, logf, NULL},
    {"math.sqrt", sqrt, NULL, sqrtf, NULL},
    {"math.sin", sin, NULL, sinf, NULL},
    {"math.cos", cos, NULL, cosf, NULL},
    {"math.tanh", tanh, NULL, tanhf, NULL},
    {"nn.relu", relu, NULL, reluf, NULL},
};

static const Array *input(const Array *arrays, int count, const char *key)
{
    for (int i = 0; i < count; i++)
        if (strcmp(arrays[i].key, key) == 0) {
            if (strcmp(arrays[i].descr, "<f8") != 0)
                unsupported("input %s is %s: only real (<f8) inputs are supported", key,
                            strcmp(arrays[i].descr, "<i8") == 0   ? "int (<i8)"
                            : strcmp(arrays[i].descr, "|b1") == 0 ? "bool (|b1)"
                                                                  : arrays[i].descr);
            return &arrays[i];
        }
    fail("the inputs have no array '%s'", key);
    return NULL;
}

int main(int argc, char **argv)
{
    int single = 0;
    if (argc > 1 && strcmp(argv[1], "--float32") == 0) {
        single = 1;
        argv++;
        argc--;
    }
    if (argc != 4)
        fail("usage: minirt [--float32] OPERATOR INPUTS.npz OUTPUTS.npz");
    const char *name = argv[1];
    const Operator *op = NULL;
    for (size_t i = 0; i < sizeof OPERATORS / sizeof *OPERATORS; i++)
        if (strcmp(OPERATORS[i].name, name) == 0)
            op = &OPERATORS[i];
    if (!op)
        unsupported("operator %s is not supported", name);

    Array inputs[MAX_ARRAYS];
    unsigned char *file;
    int count = read_npz(argv[2], inputs, &file);
    int binary = op->binary != NULL;
    const Array *x = input(inputs, count, "x");
    const Array *y = binary ? input(inputs, count, "y") : NULL;
    if (count != 1 + binary)
        unsupported("%s takes %d input(s); the inputs hold %d arrays", name, 1 + binary, count);
    if (binary && (x->rank != y->rank ||
                   memcmp(x->shape, y->shape, (size_t)x->rank * sizeof *x->shape) != 0))
        unsupported("broadcasting unsupported (x and y differ in shape)");

    Array out = *x;
    strcpy(out.key, binary ? "z" : "y");
    strcpy(out.descr, single ? "<f4" : "<f8");
    unsigned char *data = checked_malloc((size_t)x->count * 8);
    for (uint64_t i = 0; i < x->count; i++) {
        double a = get_f8(x->data + 8 * i), b = binary ? get_f8(y->data + 8 * i) : 0.0;
        if (single)
            put_f4(data + 4 * i, binary ? op->binary_f((float)a, (float)b)
                                        : op->unary_f((float)a));
        else
            put_f8(data + 8 * i, binary ? op->binary(a, b) : op->unary(a));
    }
    out.data = data;
    write_npz(argv[3], &out, 1);
    free(data);
    free(file);
    return 0;
}
