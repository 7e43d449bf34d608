/* Tests of core/io: CRC32C, TFRecord framing, tf.train.Example. */
#include "tests/t.h"

#include <stdlib.h>

#include "base/util.h"
#include "base/crc32c.h"
#include "io/example.h"
#include "io/tfrecord.h"

/* Known vectors: "123456789" is the standard check value; the 32-byte ones are from
 * RFC 3720 (iSCSI), appendix B.4. */
static void check_vectors(uint32_t (*fn)(uint32_t, const void *, size_t), const char *name)
{
    uint8_t buf[32];
    T_CHECKF(fn(0, "123456789", 9) == 0xe3069283u, "%s: check value", name);
    memset(buf, 0, 32);
    T_CHECKF(fn(0, buf, 32) == 0x8a9136aau, "%s: 32 zeros", name);
    memset(buf, 0xff, 32);
    T_CHECKF(fn(0, buf, 32) == 0x62a8ab43u, "%s: 32 0xff", name);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    T_CHECKF(fn(0, buf, 32) == 0x46dd794eu, "%s: ascending", name);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    T_CHECKF(fn(0, buf, 32) == 0x113fdb5cu, "%s: descending", name);
    T_CHECKF(fn(0, "", 0) == 0, "%s: empty", name);
}

TEST(crc32c_known_vectors_software)
{
    check_vectors(crc32c_sw, "software");
}

TEST(crc32c_known_vectors_hardware)
{
    if (!crc32c_have_hw())
        printf("  note: no SSE4.2 on this CPU; hardware path falls back to software\n");
    check_vectors(crc32c_hw, "hardware");
}

TEST(crc32c_paths_agree_on_odd_lengths_and_alignments)
{
    uint8_t *buf = malloc(4099);
    for (int i = 0; i < 4099; i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    for (size_t off = 0; off < 9; off++)
        for (size_t len = 0; len < 4090; len += 37)
            T_REQUIRE(crc32c_sw(0, buf + off, len) == crc32c_hw(0, buf + off, len));
    /* Extending in pieces equals one pass. */
    uint32_t whole = crc32c(buf, 4099);
    uint32_t part = crc32c_extend(crc32c_extend(0, buf, 1000), buf + 1000, 3099);
    T_CHECK(whole == part);
    free(buf);
}

TEST(crc32c_mask_roundtrip)
{
    for (uint32_t v = 1; v < 0xfffff000u; v += 0x01234567u)
        T_REQUIRE(crc32c_unmask(crc32c_mask(v)) == v);
}

/* ---- TFRecord ---------------------------------------------------------------- */

TEST(tfrecord_write_then_read_roundtrips_byte_for_byte)
{
    const char *dir = t_tmpdir();
    char path[4096];
    snprintf(path, sizeof path, "%s/a.tfrecord", dir);
    tfr_writer *w;
    pt_err e;
    T_REQUIRE(tfr_writer_open(&w, path, &e) == PT_OK);
    /* Records of many sizes, including empty. */
    size_t sizes[] = { 0, 1, 7, 8, 100, 65535, 65536, 200001 };
    size_t nrec = sizeof sizes / sizeof sizes[0];
    uint8_t *data = malloc(200001);
    for (size_t i = 0; i < 200001; i++)
        data[i] = (uint8_t)(i ^ (i >> 8));
    for (size_t i = 0; i < nrec; i++)
        T_REQUIRE(tfr_write(w, data, sizes[i], &e) == PT_OK);
    T_REQUIRE(tfr_writer_close(w, &e) == PT_OK);

    tfr_reader *r;
    T_REQUIRE(tfr_open(&r, path, &e) == PT_OK);
    const uint8_t *p;
    size_t n;
    long long expect_off = 0;
    for (size_t i = 0; i < nrec; i++) {
        T_REQUIRE(tfr_next(r, &p, &n, &e) == 1);
        T_EQ_INT(n, sizes[i]);
        T_CHECK(n == 0 || memcmp(p, data, n) == 0);
        T_EQ_INT(tfr_index(r), (long long)i);
        T_EQ_INT(tfr_offset(r), expect_off);
        expect_off += (long long)sizes[i] + TFR_OVERHEAD;
    }
    T_EQ_INT(tfr_next(r, &p, &n, &e), 0);
    tfr_close(r);

    /* Write the file again from what was read: identical bytes. */
    uint8_t *orig;
    size_t olen;
    T_REQUIRE(util_read_file(path, &orig, &olen, &e) == PT_OK);
    T_EQ_INT(olen, expect_off);
    char path2[4096];
    snprintf(path2, sizeof path2, "%s/b.tfrecord", dir);
    T_REQUIRE(tfr_open(&r, path, &e) == PT_OK);
    T_REQUIRE(tfr_writer_open(&w, path2, &e) == PT_OK);
    while (tfr_next(r, &p, &n, &e) == 1)
        T_REQUIRE(tfr_write(w, p, n, &e) == PT_OK);
    tfr_close(r);
    T_REQUIRE(tfr_writer_close(w, &e) == PT_OK);
    uint8_t *copy;
    size_t clen;
    T_REQUIRE(util_read_file(path2, &copy, &clen, &e) == PT_OK);
    T_CHECK(clen == olen && memcmp(orig, copy, olen) == 0);
    free(orig);
    free(copy);
    free(data);
}

/* Writes a small file, damages it with fn, and returns what the reader reports. */
static void write_three(const char *path)
{
    tfr_writer *w;
    pt_err e;
    tfr_writer_open(&w, path, &e);
    for (int i = 0; i < 3; i++) {
        char rec[33];
        snprintf(rec, sizeof rec, "record number %d with some bytes!", i); /* 32 bytes */
        tfr_write(w, rec, 32, &e);
    }
    tfr_writer_close(w, &e);
}

static void patch_byte(const char *path, long off, int xor_with)
{
    FILE *f = fopen(path, "r+b");
    fseek(f, off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ xor_with, f);
    fclose(f);
}

TEST(tfrecord_payload_crc_error_names_record_and_offset_and_continues)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/p.tfrecord", t_tmpdir());
    write_three(path);
    /* each payload is 32 bytes, each record 48;
     * record 1 header at 48, its payload at 60. */
    patch_byte(path, 60 + 5, 0x20);
    tfr_reader *r;
    pt_err e;
    T_REQUIRE(tfr_open(&r, path, &e) == PT_OK);
    const uint8_t *p;
    size_t n;
    T_EQ_INT(tfr_next(r, &p, &n, &e), 1);
    err_clear(&e);
    T_EQ_INT(tfr_next(r, &p, &n, &e), PT_ECRC);
    T_EQ_INT(e.record, 1);
    T_EQ_INT(e.offset, 48);
    T_CHECKF(strstr(e.msg, "p.tfrecord: record 1 at byte 48: payload crc mismatch") != NULL,
             "message: %s", e.msg);
    T_EQ_INT(tfr_next(r, &p, &n, &e), 1);
    T_CHECK(n > 14 && memcmp(p, "record number 2", 15) == 0);
    T_EQ_INT(tfr_next(r, &p, &n, &e), 0);
    tfr_close(r);
}

TEST(tfrecord_length_crc_error_stops_the_file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/l.tfrecord", t_tmpdir());
    write_three(path);
    patch_byte(path, 48 + 1, 0x01); /* length of record 1 */
    tfr_reader *r;
    pt_err e;
    T_REQUIRE(tfr_open(&r, path, &e) == PT_OK);
    const uint8_t *p;
    size_t n;
    T_EQ_INT(tfr_next(r, &p, &n, &e), 1);
    T_EQ_INT(tfr_next(r, &p, &n, &e), PT_ECRC);
    T_EQ_INT(e.record, 1);
    T_EQ_INT(e.offset, 48);
    T_CHECK(strstr(e.msg, "length crc mismatch") != NULL);
    T_EQ_INT(tfr_next(r, &p, &n, &e), 0);
    tfr_close(r);
}

TEST(tfrecord_truncation_at_every_length_is_reported_never_crashes)
{
    const char *dir = t_tmpdir();
    char path[4096], cut[4096];
    snprintf(path, sizeof path, "%s/full.tfrecord", dir);
    snprintf(cut, sizeof cut, "%s/cut.tfrecord", dir);
    write_three(path);
    uint8_t *full;
    size_t flen;
    pt_err e;
    T_REQUIRE(util_read_file(path, &full, &flen, &e) == PT_OK);
    for (size_t keep = 0; keep < flen; keep++) {
        FILE *f = fopen(cut, "wb");
        fwrite(full, 1, keep, f);
        fclose(f);
        tfr_reader *r;
        T_REQUIRE(tfr_open(&r, cut, &e) == PT_OK);
        const uint8_t *p;
        size_t n;
        int rc, good = 0, errors = 0;
        while ((rc = tfr_next(r, &p, &n, &e)) != 0) {
            if (rc == 1)
                good++;
            else {
                errors++;
                T_CHECK(rc == PT_ETRUNC);
                T_CHECK(e.record == good);
            }
        }
        tfr_close(r);
        /* Records end at 48, 96, 144: a cut at a boundary is a clean, shorter file. */
        int boundary = keep == 0 || keep == 48 || keep == 96;
        T_CHECKF(errors == (boundary ? 0 : 1), "keep=%zu errors=%d", keep, errors);
        T_CHECKF(good == (int)(keep / 48), "keep=%zu good=%d", keep, good);
    }
    free(full);
}

TEST(tfrecord_writer_is_atomic_abort_leaves_nothing)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/x.tfrecord", t_tmpdir());
    tfr_writer *w;
    pt_err e;
    T_REQUIRE(tfr_writer_open(&w, path, &e) == PT_OK);
    tfr_write(w, "abc", 3, &e);
    T_CHECK(!util_is_file(path)); /* not visible before close */
    tfr_writer_abort(w);
    T_CHECK(!util_is_file(path));
}

/* ---- Example ------------------------------------------------------------------ */

TEST(example_build_serialize_parse_all_kinds)
{
    ex_builder *b = ex_builder_new();
    int64_t cls = 57;
    float fs[3] = { 1.5f, -2.25f, 3.0e10f };
    T_REQUIRE(ex_add_bytes(b, "image", "\xff\xd8\xff\xe0", 4) == PT_OK);
    T_REQUIRE(ex_add_int64(b, "class", &cls, 1) == PT_OK);
    T_REQUIRE(ex_add_bytes(b, "id", "338ab7bac", 9) == PT_OK);
    T_REQUIRE(ex_add_float(b, "floats", fs, 3) == PT_OK);
    uint8_t *buf;
    size_t len;
    T_REQUIRE(ex_serialize(b, &buf, &len) == PT_OK);
    ex_builder_free(b);

    ex_example *ex;
    pt_err e;
    T_REQUIRE(ex_parse(buf, len, &ex, "mem", 0, 0, &e) == PT_OK);
    T_EQ_INT(ex_count(ex), 4);
    int64_t v;
    T_REQUIRE(ex_get_int64(ex, "class", &v, &e) == PT_OK);
    T_EQ_INT(v, 57);
    const uint8_t *p;
    size_t n;
    T_REQUIRE(ex_get_bytes(ex, "id", &p, &n, &e) == PT_OK);
    T_CHECK(n == 9 && memcmp(p, "338ab7bac", 9) == 0);
    long fi = ex_find(ex, "floats");
    T_REQUIRE(fi >= 0);
    T_EQ_INT(ex_kind_at(ex, (size_t)fi), EX_FLOAT);
    T_EQ_INT(ex_len_at(ex, (size_t)fi), 3);
    T_CHECK(ex_float_at(ex, (size_t)fi, 1) == -2.25f);
    T_CHECK(ex_float_at(ex, (size_t)fi, 2) == 3.0e10f);
    /* Wrong type and missing keys are clear errors. */
    T_EQ_INT(ex_get_int64(ex, "image", &v, &e), PT_EFEATURE);
    T_CHECK(strstr(e.msg, "'image' is bytes, expected int64") != NULL);
    T_EQ_INT(ex_get_bytes(ex, "label", &p, &n, &e), PT_EFEATURE);
    T_CHECK(strstr(e.msg, "'label' is missing") != NULL);
    ex_free(ex);
    free(buf);
}

/* Hand-written wire bytes: an Int64List written unpacked (one tag per value), which
 * older writers produce, and the packed form; both must read the same. */
TEST(example_reads_packed_and_unpacked_repeated_scalars)
{
    /* Example{features{feature{key:"k" value{int64_list{value:[1,300]}}}}} */
    static const uint8_t unpacked[] = {
        0x0a, 0x10,                   /* Example.features, len 16 */
        0x0a, 0x0e,                   /* Features.feature entry, len 14 */
        0x0a, 0x01, 'k',              /* key */
        0x12, 0x09,                   /* value: Feature, len 9 */
        0x1a, 0x07,                   /* int64_list, len 7 */
        0x08, 0x01,                   /* value: 1 (unpacked) */
        0x08, 0xac, 0x02,             /* value: 300 (unpacked) */
        0x08, 0x00,                   /* value: 0 */
    };
    static const uint8_t packed[] = {
        0x0a, 0x0f, 0x0a, 0x0d, 0x0a, 0x01, 'k', 0x12, 0x08,
        0x1a, 0x06,                   /* int64_list, len 6 */
        0x0a, 0x04, 0x01, 0xac, 0x02, 0x00, /* packed: [1, 300, 0] */
    };
    /* FloatList unpacked: tag 0x0d (field 1, fixed32) per value. */
    static const uint8_t fl_unpacked[] = {
        0x0a, 0x13, 0x0a, 0x11, 0x0a, 0x01, 'f', 0x12, 0x0c,
        0x12, 0x0a,                   /* float_list, len 10 */
        0x0d, 0x00, 0x00, 0xc0, 0x3f, /* 1.5 */
        0x0d, 0x00, 0x00, 0x20, 0xc0, /* -2.5 */
    };
    ex_example *a, *b, *c;
    pt_err e;
    T_REQUIRE(ex_parse(unpacked, sizeof unpacked, &a, "u", 0, 0, &e) == PT_OK);
    T_REQUIRE(ex_parse(packed, sizeof packed, &b, "p", 0, 0, &e) == PT_OK);
    T_REQUIRE(ex_parse(fl_unpacked, sizeof fl_unpacked, &c, "f", 0, 0, &e) == PT_OK);
    T_EQ_INT(ex_len_at(a, 0), 3);
    T_EQ_INT(ex_len_at(b, 0), 3);
    for (size_t j = 0; j < 3; j++)
        T_EQ_INT(ex_int64_at(a, 0, j), ex_int64_at(b, 0, j));
    T_EQ_INT(ex_int64_at(a, 0, 1), 300);
    T_EQ_INT(ex_len_at(c, 0), 2);
    T_CHECK(ex_float_at(c, 0, 0) == 1.5f && ex_float_at(c, 0, 1) == -2.5f);
    ex_free(a);
    ex_free(b);
    ex_free(c);
}

TEST(example_garbage_is_a_parse_error_not_a_crash)
{
    uint8_t junk[257];
    for (int i = 0; i < 257; i++)
        junk[i] = (uint8_t)(i * 97 + 13);
    pt_err e;
    ex_example *ex;
    int errors = 0;
    /* Every prefix of junk: each parses or fails cleanly. */
    for (size_t n = 1; n <= sizeof junk; n++) {
        int rc = ex_parse(junk, n, &ex, "junk", 4, 1234, &e);
        if (rc == PT_OK)
            ex_free(ex);
        else {
            errors++;
            T_EQ_INT(rc, PT_EPARSE);
            T_EQ_INT(e.record, 4);
            T_EQ_INT(e.offset, 1234);
        }
    }
    T_CHECK(errors > 0);
}

/* ---- Files written by TensorFlow -------------------------------------------------- */

TEST(tf_written_singles_tfrecords_reads_exact_values)
{
    /* Written by TensorFlow; vendored (tests/data/tfrecord/ORIGIN.md). */
    const char *path = "tests/data/tfrecord/singles.tfrecords";
    tfr_reader *r;
    pt_err e;
    T_REQUIRE(tfr_open(&r, path, &e) == PT_OK);
    const uint8_t *p;
    size_t n;
    ex_example *ex;

    T_REQUIRE(tfr_next(r, &p, &n, &e) == 1);
    T_REQUIRE(ex_parse(p, n, &ex, path, 0, 0, &e) == PT_OK);
    int64_t iv;
    T_REQUIRE(ex_get_int64(ex, "int_feature", &iv, &e) == PT_OK);
    T_EQ_INT(iv, 42);
    T_EQ_INT(ex_count(ex), 1);
    ex_free(ex);

    T_REQUIRE(tfr_next(r, &p, &n, &e) == 1);
    T_REQUIRE(ex_parse(p, n, &ex, path, 1, 0, &e) == PT_OK);
    float fv;
    T_REQUIRE(ex_get_float(ex, "float_feature", &fv, &e) == PT_OK);
    T_CHECK(fv == 3.14f);
    ex_free(ex);

    T_REQUIRE(tfr_next(r, &p, &n, &e) == 1);
    T_REQUIRE(ex_parse(p, n, &ex, path, 2, 0, &e) == PT_OK);
    const uint8_t *bv;
    size_t bl;
    T_REQUIRE(ex_get_bytes(ex, "byte_feature", &bv, &bl, &e) == PT_OK);
    T_CHECK(bl == 5 && memcmp(bv, "@ABCD", 5) == 0);
    ex_free(ex);

    T_EQ_INT(tfr_next(r, &p, &n, &e), 0);
    T_EQ_INT(tfr_file_size(r), 130);
    tfr_close(r);
}

TEST(node_written_data_tfrecord_reads)
{
    const char *path = "tests/data/tfrecord/data.tfrecord";
    tfr_reader *r;
    pt_err e;
    T_REQUIRE(tfr_open(&r, path, &e) == PT_OK);
    const uint8_t *p;
    size_t n;
    T_REQUIRE(tfr_next(r, &p, &n, &e) == 1);
    ex_example *ex;
    T_REQUIRE(ex_parse(p, n, &ex, path, 0, 0, &e) == PT_OK);
    T_CHECK(ex_find(ex, "answer") >= 0 && ex_kind_at(ex, (size_t)ex_find(ex, "answer")) == EX_INT64);
    T_CHECK(ex_find(ex, "name") >= 0 && ex_kind_at(ex, (size_t)ex_find(ex, "name")) == EX_BYTES);
    T_CHECK(ex_find(ex, "pi") >= 0 && ex_kind_at(ex, (size_t)ex_find(ex, "pi")) == EX_FLOAT);
    ex_free(ex);
    T_EQ_INT(tfr_next(r, &p, &n, &e), 0);
    tfr_close(r);
}

static int has_bytes(const uint8_t *p, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(p + i, needle, k) == 0)
            return 1;
    return 0;
}

TEST(tf_written_tfevents_all_records_pass_crc)
{
    T_NEED_DATA();
    /* Event protos, not Examples: framing and CRCs only. Record counts per SOURCES.md. */
    char out[64];
    char *listing = NULL;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "find '%s' -type f -name 'events.out.tfevents.*' | sort",
             t_data("tf-written-tfrecords/tfevents-petals"));
    T_REQUIRE(t_run(cmd, &listing) == 0);
    long long total = 0;
    int files = 0;
    for (char *line = strtok(listing, "\n"); line; line = strtok(NULL, "\n")) {
        tfr_reader *r;
        pt_err e;
        T_REQUIRE(tfr_open(&r, line, &e) == PT_OK);
        const uint8_t *p;
        size_t n;
        int rc;
        long long cnt = 0;
        while ((rc = tfr_next(r, &p, &n, &e)) == 1) {
            if (cnt == 0)
                T_CHECK(n > 20 && has_bytes(p, n, "brain.Event:2"));
            cnt++;
        }
        T_CHECKF(rc == 0, "%s", e.msg);
        tfr_close(r);
        total += cnt;
        files++;
    }
    (void)out;
    T_EQ_INT(files, 7);
    T_EQ_INT(total, 50 + 1 + 1533 + 61 + 3 + 1023 + 41);
    free(listing);
}

TEST(crlf_damaged_pets_file_reports_crc_error_at_record_0)
{
    T_NEED_DATA();
    const char *path = t_data("tf-written-tfrecords/crlf-damaged/pets_examples.record");
    tfr_reader *r;
    pt_err e;
    T_REQUIRE(tfr_open(&r, path, &e) == PT_OK);
    const uint8_t *p;
    size_t n;
    int rc = tfr_next(r, &p, &n, &e);
    T_EQ_INT(rc, PT_ECRC);
    T_EQ_INT(e.record, 0);
    T_EQ_INT(e.offset, 0);
    T_CHECK(strstr(e.msg, "pets_examples.record: record 0 at byte 0: payload crc mismatch"));
    /* The next header (record 1 at 18430 + 16) is misplaced by the lost bytes: the reader
     * must report it and stop, never hand out a record. */
    int good = 0, errs = 0;
    while ((rc = tfr_next(r, &p, &n, &e)) != 0) {
        if (rc == 1)
            good++;
        else
            errs++;
    }
    T_EQ_INT(good, 0);
    T_CHECK(errs >= 1);
    T_CHECK(e.record == 1 && e.offset == 18446);
    tfr_close(r);
}

TEST(crlf_damaged_serengeti_file_reports_truncation)
{
    T_NEED_DATA();
    const char *path =
        t_data("tf-written-tfrecords/crlf-damaged/snapshot_serengeti_sequence_examples.record");
    tfr_reader *r;
    pt_err e;
    T_REQUIRE(tfr_open(&r, path, &e) == PT_OK);
    const uint8_t *p;
    size_t n;
    T_EQ_INT(tfr_next(r, &p, &n, &e), PT_ETRUNC);
    T_EQ_INT(e.record, 0);
    T_EQ_INT(e.offset, 0);
    T_CHECKF(strstr(e.msg, "820669") != NULL, "message: %s", e.msg);
    T_EQ_INT(tfr_next(r, &p, &n, &e), 0);
    tfr_close(r);
}
