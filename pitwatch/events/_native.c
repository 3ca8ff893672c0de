/* Avro blocks of records read in C, for the file audit: where each record ends, and
   each record built straight into pitwatch's typed classes.

   Both walk a block's bytes under a program compiled from the writer schema
   (pitwatch/events/native.py):
   - `frame(program, data, count)` returns (ends, tables): the offset where each record
     ends and the text of its table_id field, decoding nothing else;
   - `build(program, consts, data, count)` returns the records, each built by calling the
     builder its record type names in `consts` with its fields in the schema's order (the
     top-level one with the record's bytes after them), an enum giving its value from a
     tuple in `consts`, an array a tuple, a map a dict.
   Either returns None for anything it does not accept: bytes short of a record, a union
   or enum index outside its schema, a negative length, text that is not UTF-8, a
   boolean other than 0 or 1, a varint past 64 bits, bytes left over after the last
   record, a builder that raises. It is stricter than fastavro, never looser, so a block
   it accepts fastavro reads to the same values, and a block it refuses the caller reads
   with fastavro as before.

   No I/O, no state: the same bytes give the same answer. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum {
    OP_NULL, OP_BOOLEAN, OP_INT, OP_LONG, OP_FLOAT, OP_DOUBLE, OP_BYTES, OP_STRING,
    OP_FIXED,  /* size */
    OP_ENUM,   /* symbols, values (a tuple in consts) */
    OP_RECORD, /* fields, builder (in consts), then each field's node */
    OP_UNION,  /* branches, end, then each branch's pc */
    OP_ARRAY,  /* end, then the item's node */
    OP_MAP,    /* end, then the value's node */
    OP_REF,    /* pc of a named type defined before */
    OP_KEY,    /* a string, the table_id: its span is kept */
};

#define MAX_REF_DEPTH 64
#define MAX_FIELDS 64

typedef struct {
    const uint8_t *p, *end;
    const int32_t *prog;
    Py_ssize_t len;
    const uint8_t *key;
    Py_ssize_t key_len;
    int depth;
} Walk;

static int read_long(Walk *w, int64_t *out) {
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (w->p >= w->end) return -1;
        uint8_t b = *w->p++;
        if (i == 9 && b > 1) return -1;  /* past 64 bits */
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return 0;
        }
    }
    return -1;
}

static int skip_text(Walk *w, int is_key) {
    int64_t n;
    if (read_long(w, &n) < 0 || n < 0 || n > w->end - w->p) return -1;
    const uint8_t *s = w->p;
    for (int64_t i = 0; i < n; i++) {
        if (s[i] & 0x80) {  /* not ASCII: Python's own strict decoder decides */
            PyObject *u = PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)n, "strict");
            if (u == NULL) {
                PyErr_Clear();
                return -1;
            }
            Py_DECREF(u);
            break;
        }
    }
    if (is_key) {
        w->key = s;
        w->key_len = (Py_ssize_t)n;
    }
    w->p += n;
    return 0;
}

static Py_ssize_t walk(Walk *w, Py_ssize_t pc);

/* Array and map blocks: a count (negative: its absolute value, then a byte size),
   until a count of 0. Each item takes at least a byte here, so a count can never
   outrun the data (a block of zero-width items is left to fastavro). */
static int skip_items(Walk *w, Py_ssize_t item, int keyed) {
    for (;;) {
        int64_t count, size;
        if (read_long(w, &count) < 0) return -1;
        if (count == 0) return 0;
        if (count < 0) {
            if (count == INT64_MIN || read_long(w, &size) < 0 || size < 0) return -1;
            count = -count;
        }
        if (count > w->end - w->p) return -1;
        for (int64_t i = 0; i < count; i++) {
            if (keyed && skip_text(w, 0) < 0) return -1;
            if (walk(w, item) < 0) return -1;
        }
    }
}

static int need(Walk *w, Py_ssize_t n) {
    if (n < 0 || w->end - w->p < n) return -1;
    w->p += n;
    return 0;
}

/* Walk the node at pc over the bytes; the pc after the node, or -1. */
static Py_ssize_t walk(Walk *w, Py_ssize_t pc) {
    const int32_t *prog = w->prog;
    if (pc < 0 || pc >= w->len) return -1;
    int64_t v;
    switch (prog[pc]) {
    case OP_NULL:
        return pc + 1;
    case OP_BOOLEAN:
        return need(w, 1) < 0 ? -1 : pc + 1;
    case OP_INT:
    case OP_LONG:
        return read_long(w, &v) < 0 ? -1 : pc + 1;
    case OP_FLOAT:
        return need(w, 4) < 0 ? -1 : pc + 1;
    case OP_DOUBLE:
        return need(w, 8) < 0 ? -1 : pc + 1;
    case OP_BYTES:
        if (read_long(w, &v) < 0 || v < 0) return -1;
        return need(w, (Py_ssize_t)v) < 0 ? -1 : pc + 1;
    case OP_STRING:
    case OP_KEY:
        return skip_text(w, prog[pc] == OP_KEY) < 0 ? -1 : pc + 1;
    case OP_FIXED:
        if (pc + 1 >= w->len) return -1;
        return need(w, prog[pc + 1]) < 0 ? -1 : pc + 2;
    case OP_ENUM:
        if (pc + 2 >= w->len) return -1;
        if (read_long(w, &v) < 0 || v < 0 || v >= prog[pc + 1]) return -1;
        return pc + 3;
    case OP_RECORD: {
        if (pc + 2 >= w->len) return -1;
        Py_ssize_t next = pc + 3;
        for (int32_t i = 0; i < prog[pc + 1]; i++)
            if ((next = walk(w, next)) < 0) return -1;
        return next;
    }
    case OP_UNION:
        if (pc + 2 >= w->len) return -1;
        if (read_long(w, &v) < 0 || v < 0 || v >= prog[pc + 1] || pc + 3 + v >= w->len)
            return -1;
        return walk(w, prog[pc + 3 + v]) < 0 ? -1 : prog[pc + 2];
    case OP_ARRAY:
    case OP_MAP:
        if (pc + 1 >= w->len) return -1;
        return skip_items(w, pc + 2, prog[pc] == OP_MAP) < 0 ? -1 : prog[pc + 1];
    case OP_REF: {
        if (pc + 1 >= w->len || w->depth >= MAX_REF_DEPTH) return -1;
        w->depth++;
        Py_ssize_t r = walk(w, prog[pc + 1]);
        w->depth--;
        return r < 0 ? -1 : pc + 2;
    }
    default:
        return -1;
    }
}

/* --- building ----------------------------------------------------------------- */

typedef struct {
    Walk w;
    PyObject *consts;  /* a tuple */
} Build;

static PyObject *build(Build *b, Py_ssize_t pc, Py_ssize_t *next, int top);

static const uint8_t *take(Walk *w, int64_t n) {
    if (n < 0 || n > w->end - w->p) return NULL;
    const uint8_t *s = w->p;
    w->p += n;
    return s;
}

static PyObject *constant(Build *b, int32_t i) {
    return i >= 0 && i < PyTuple_GET_SIZE(b->consts) ? PyTuple_GET_ITEM(b->consts, i) : NULL;
}

/* Items of an array (as a tuple) or a map (as a dict), by blocks as skip_items reads. */
static PyObject *build_items(Build *b, Py_ssize_t item, int keyed) {
    Walk *w = &b->w;
    PyObject *out = keyed ? PyDict_New() : PyList_New(0);
    if (out == NULL) return NULL;
    for (;;) {
        int64_t count, size;
        if (read_long(w, &count) < 0) goto fail;
        if (count == 0) break;
        if (count < 0) {
            if (count == INT64_MIN || read_long(w, &size) < 0 || size < 0) goto fail;
            count = -count;
        }
        if (count > w->end - w->p) goto fail;
        for (int64_t i = 0; i < count; i++) {
            PyObject *key = NULL, *value;
            Py_ssize_t ignored;
            if (keyed) {
                int64_t n;
                const uint8_t *s;
                if (read_long(w, &n) < 0 || (s = take(w, n)) == NULL) goto fail;
                if ((key = PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)n, "strict")) == NULL)
                    goto fail;
            }
            value = build(b, item, &ignored, 0);
            int bad = value == NULL || (keyed ? PyDict_SetItem(out, key, value)
                                              : PyList_Append(out, value)) < 0;
            Py_XDECREF(key);
            Py_XDECREF(value);
            if (bad) goto fail;
        }
    }
    if (keyed) return out;
    PyObject *tuple = PyList_AsTuple(out);
    Py_DECREF(out);
    return tuple;
fail:
    Py_DECREF(out);
    return NULL;
}

/* A record from its builder; the top-level one gets the record's bytes after its fields. */
static PyObject *build_record(Build *b, Py_ssize_t pc, Py_ssize_t *next, int top) {
    const int32_t *prog = b->w.prog;
    const uint8_t *from = b->w.p;
    if (pc + 2 >= b->w.len || prog[pc + 1] > MAX_FIELDS) return NULL;
    PyObject *builder = constant(b, prog[pc + 2]);
    if (builder == NULL) return NULL;
    PyObject *args[MAX_FIELDS + 1];
    int32_t n = 0;
    Py_ssize_t at = pc + 3;
    PyObject *out = NULL;
    for (; n < prog[pc + 1]; n++)
        if ((args[n] = build(b, at, &at, 0)) == NULL) goto done;
    if (top &&
        (args[n++] = PyBytes_FromStringAndSize((const char *)from, b->w.p - from)) == NULL) {
        n--;
        goto done;
    }
    out = PyObject_Vectorcall(builder, args, (size_t)n, NULL);
    *next = at;
done:
    for (int32_t i = 0; i < n; i++) Py_DECREF(args[i]);
    return out;
}

/* The value of the node at pc (a new reference), with the pc after it in *next; NULL
   when the bytes are refused (with or without a Python error set). */
static PyObject *build(Build *b, Py_ssize_t pc, Py_ssize_t *next, int top) {
    Walk *w = &b->w;
    const int32_t *prog = w->prog;
    if (pc < 0 || pc >= w->len) return NULL;
    int64_t v;
    const uint8_t *s;
    *next = pc + 1;
    switch (prog[pc]) {
    case OP_NULL:
        return Py_NewRef(Py_None);
    case OP_BOOLEAN:
        if ((s = take(w, 1)) == NULL || *s > 1) return NULL;
        return PyBool_FromLong(*s);
    case OP_INT:
    case OP_LONG:
        return read_long(w, &v) < 0 ? NULL : PyLong_FromLongLong(v);
    case OP_FLOAT:
        return (s = take(w, 4)) == NULL ? NULL
               : PyFloat_FromDouble(PyFloat_Unpack4((const char *)s, 1));
    case OP_DOUBLE:
        return (s = take(w, 8)) == NULL ? NULL
               : PyFloat_FromDouble(PyFloat_Unpack8((const char *)s, 1));
    case OP_BYTES:
        if (read_long(w, &v) < 0 || (s = take(w, v)) == NULL) return NULL;
        return PyBytes_FromStringAndSize((const char *)s, (Py_ssize_t)v);
    case OP_STRING:
    case OP_KEY:
        if (read_long(w, &v) < 0 || (s = take(w, v)) == NULL) return NULL;
        return PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)v, "strict");
    case OP_FIXED:
        if (pc + 1 >= w->len || (s = take(w, prog[pc + 1])) == NULL) return NULL;
        *next = pc + 2;
        return PyBytes_FromStringAndSize((const char *)s, prog[pc + 1]);
    case OP_ENUM: {
        if (pc + 2 >= w->len) return NULL;
        PyObject *values = constant(b, prog[pc + 2]);
        if (values == NULL || !PyTuple_Check(values) || read_long(w, &v) < 0 || v < 0 ||
            v >= prog[pc + 1] || v >= PyTuple_GET_SIZE(values))
            return NULL;
        *next = pc + 3;
        return Py_NewRef(PyTuple_GET_ITEM(values, v));
    }
    case OP_RECORD:
        return build_record(b, pc, next, top);
    case OP_UNION: {
        Py_ssize_t ignored;
        if (pc + 2 >= w->len) return NULL;
        if (read_long(w, &v) < 0 || v < 0 || v >= prog[pc + 1] || pc + 3 + v >= w->len)
            return NULL;
        *next = prog[pc + 2];
        return build(b, prog[pc + 3 + v], &ignored, 0);
    }
    case OP_ARRAY:
    case OP_MAP:
        if (pc + 1 >= w->len) return NULL;
        *next = prog[pc + 1];
        return build_items(b, pc + 2, prog[pc] == OP_MAP);
    case OP_REF: {
        Py_ssize_t ignored;
        if (pc + 1 >= w->len || w->depth >= MAX_REF_DEPTH) return NULL;
        w->depth++;
        PyObject *r = build(b, prog[pc + 1], &ignored, 0);
        w->depth--;
        *next = pc + 2;
        return r;
    }
    default:
        return NULL;
    }
}

static PyObject *build_block(PyObject *self, PyObject *args) {
    Py_buffer prog, data;
    PyObject *consts;
    Py_ssize_t count;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*O!y*n", &prog, &PyTuple_Type, &consts, &data, &count))
        return NULL;
    PyObject *out = NULL, *result = NULL;
    if (prog.len % 4 || count < 0 || count > data.len) goto refused;
    if ((out = PyList_New(count)) == NULL) goto done;
    const uint8_t *start = data.buf;
    Build b = {{start, start + data.len, prog.buf, prog.len / 4, NULL, 0, 0}, consts};
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t next;
        PyObject *record = build(&b, 0, &next, 1);
        if (record == NULL) goto refused;
        PyList_SET_ITEM(out, i, record);
    }
    if (b.w.p != b.w.end) goto refused;
    result = Py_NewRef(out);
    goto done;
refused:
    PyErr_Clear();
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(out);
    PyBuffer_Release(&prog);
    PyBuffer_Release(&data);
    return result;
}

/* --- framing ------------------------------------------------------------------ */

static PyObject *frame(PyObject *self, PyObject *args) {
    Py_buffer prog, data;
    Py_ssize_t count;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*n", &prog, &data, &count)) return NULL;
    PyObject *ends = NULL, *tables = NULL, *result = NULL;
    if (prog.len % 4 || count < 0 || count > data.len) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    ends = PyList_New(count);
    tables = PyList_New(count);
    if (ends == NULL || tables == NULL) goto done;
    Walk w = {data.buf, (const uint8_t *)data.buf + data.len, prog.buf, prog.len / 4,
              NULL, 0, 0};
    for (Py_ssize_t i = 0; i < count; i++) {
        w.key = NULL;
        if (walk(&w, 0) < 0) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        PyObject *end = PyLong_FromSsize_t(w.p - (const uint8_t *)data.buf);
        if (end == NULL) goto done;
        PyList_SET_ITEM(ends, i, end);
        PyObject *key = w.key == NULL ? Py_NewRef(Py_None)
                      : PyUnicode_DecodeUTF8((const char *)w.key, w.key_len, "strict");
        if (key == NULL) goto done;
        PyList_SET_ITEM(tables, i, key);
    }
    result = w.p == w.end ? PyTuple_Pack(2, ends, tables) : Py_NewRef(Py_None);
done:
    Py_XDECREF(ends);
    Py_XDECREF(tables);
    PyBuffer_Release(&prog);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"frame", frame, METH_VARARGS,
     "frame(program, data, count) -> (ends, tables) | None"},
    {"build", build_block, METH_VARARGS,
     "build(program, consts, data, count) -> list | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "Avro blocks framed and built in C, by a program compiled from the writer schema.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
