/* Avro blocks of records read in C, for the file audit: where each record ends, and
   each record built straight into pitwatch's typed classes; and, for the store, an
   event's JSON Lines form (`body`; less what an `events` row's columns hold:
   `row_body`) and a batch of the `events` table as Arrow buffers
   (`event_columns`, `EventRows`: from the events, or straight from their Avro bytes
   with `EventRows.add_avro`), a table's record clock and its recent event ids (`Clock`,
   `Recent`), and the contract's ranges (`RangeCheck`), at the end of this file.

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
   with fastavro instead.

   No I/O, and no state but a `Recent`'s or a `Clock`'s own: the same bytes (the same
   event) give the same answer. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* ---- attributes of slotted classes (the event model's), read at their slots' offsets:
   `slot_attr(obj, name)` is `getattr(obj, name)`, and `slot_lookup` its first half. The
   offset of each (type, name) is found once, from the type's member descriptor, and kept
   with the type's version tag (a type changed since is looked up again); the types and
   names kept are held, so their addresses are never another's. Anything else (a type
   with its own __getattribute__, a name that is not a slot, an empty slot, a full
   cache) goes through Python's getattr. */

#define SLOT_CACHE 256
static struct {
    PyTypeObject *type;
    PyObject *name;
    unsigned int tag;
    Py_ssize_t offset; /* -1: not a slot holding an object */
} slot_cache[SLOT_CACHE];

/* the offset of the slot `name` of `type` holding an object, or -1 (no error set). The
   descriptor must be one of `type`'s own or its bases' (as Python's own member
   descriptor checks when it reads a slot): a class can hold another class's slot
   descriptor as an attribute, whose offset is not within its instances. */
static Py_ssize_t member_offset(PyTypeObject *type, PyObject *name) {
    PyObject *d = _PyType_Lookup(type, name); /* borrowed; sets no error */
    if (d != NULL && Py_IS_TYPE(d, &PyMemberDescr_Type)
        && PyType_IsSubtype(type, ((PyDescrObject *)d)->d_type)
        && ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX)
        return ((PyMemberDescrObject *)d)->d_member->offset;
    return -1;
}

/* 1 and a new reference in *out when `name` is a set slot of `obj`'s type; else 0 */
static int slot_lookup(PyObject *obj, PyObject *name, PyObject **out) {
    PyTypeObject *t = Py_TYPE(obj);
    if (t->tp_getattro != PyObject_GenericGetAttr
        || !PyType_HasFeature(t, Py_TPFLAGS_VALID_VERSION_TAG))
        return 0;
    size_t h = ((uintptr_t)t >> 4) * 31u + ((uintptr_t)name >> 4);
    for (size_t k = 0; k < 8; k++) {
        size_t i = (h + k) & (SLOT_CACHE - 1);
        if (slot_cache[i].type == NULL) {
            slot_cache[i].type = (PyTypeObject *)Py_NewRef((PyObject *)t);
            slot_cache[i].name = Py_NewRef(name);
            slot_cache[i].tag = 0;
        } else if (slot_cache[i].type != t || slot_cache[i].name != name) {
            continue;
        }
        if (slot_cache[i].tag != t->tp_version_tag) {
            slot_cache[i].offset = member_offset(t, name);
            slot_cache[i].tag = t->tp_version_tag;
        }
        PyObject *v = slot_cache[i].offset < 0
            ? NULL : *(PyObject **)((char *)obj + slot_cache[i].offset);
        if (v == NULL) return 0;
        *out = Py_NewRef(v);
        return 1;
    }
    return 0;
}

static PyObject *slot_attr(PyObject *obj, PyObject *name) {
    PyObject *v;
    return slot_lookup(obj, name, &v) ? v : PyObject_GetAttr(obj, name);
}

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

/* A long in its one encoding: a varint of at most 64 bits with no trailing zero byte
   (an over-long varint reads to the same value from other bytes). */
static int read_long(Walk *w, int64_t *out) {
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (w->p >= w->end) return -1;
        uint8_t b = *w->p++;
        if (i == 9 && b > 1) return -1;  /* past 64 bits */
        if (i > 0 && b == 0) return -1;  /* over-long */
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
            return 0;
        }
    }
    return -1;
}

/* A long, or an int (`is_int`): a long of 32 bits, as the Avro writer writes one (a
   wider value is not an int's encoding). */
static int read_number(Walk *w, int64_t *out, int is_int) {
    if (read_long(w, out) < 0) return -1;
    return is_int && (*out < INT32_MIN || *out > INT32_MAX) ? -1 : 0;
}

/* whether n bytes are text: ASCII, or else what Python's own strict decoder accepts */
static int utf8_valid(const uint8_t *s, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (s[i] & 0x80) {
            PyObject *u = PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)n, "strict");
            if (u == NULL) {
                PyErr_Clear();
                return 0;
            }
            Py_DECREF(u);
            return 1;
        }
    }
    return 1;
}

static int skip_text(Walk *w, int is_key) {
    int64_t n;
    if (read_long(w, &n) < 0 || n < 0 || n > w->end - w->p) return -1;
    const uint8_t *s = w->p;
    if (!utf8_valid(s, n)) return -1;
    if (is_key && w->depth == 0) {  /* the top-level record's, not a nested one's */
        w->key = s;
        w->key_len = (Py_ssize_t)n;
    }
    w->p += n;
    return 0;
}

static Py_ssize_t walk(Walk *w, Py_ssize_t pc);

/* The count of an array's or map's items in their one encoding: one block of a
   positive count then a count of 0, or a 0 alone (a negative count with a byte size,
   or the items split into blocks, read to the same items from other bytes). The count
   is at most the bytes left: the schema compiler refuses items that take no bytes. */
static int items_count(Walk *w, int64_t *count) {
    if (read_long(w, count) < 0 || *count < 0 || *count > w->end - w->p) return -1;
    return 0;
}

/* the 0 that ends a block of items (none after a count of 0) */
static int items_end(Walk *w, int64_t count) {
    int64_t end;
    return count == 0 || (read_long(w, &end) == 0 && end == 0) ? 0 : -1;
}

static int skip_items(Walk *w, Py_ssize_t item, int keyed) {
    int64_t count;
    if (items_count(w, &count) < 0) return -1;
    for (int64_t i = 0; i < count; i++) {
        if (keyed && skip_text(w, 0) < 0) return -1;
        if (walk(w, item) < 0) return -1;
    }
    return items_end(w, count);
}

/* a float's 4 bytes as Python reads and writes them back: a signalling NaN comes back
   quiet, other bytes */
static int float_canonical(const uint8_t *s) {
    unsigned char back[4];
    if (PyFloat_Pack4(PyFloat_Unpack4((const char *)s, 1), (char *)back, 1) < 0) {
        PyErr_Clear();
        return 0;
    }
    return memcmp(back, s, 4) == 0;
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
    case OP_BOOLEAN:  /* 0 or 1: another byte reads as true, and is not its one form */
        return need(w, 1) < 0 || w->p[-1] > 1 ? -1 : pc + 1;
    case OP_INT:
    case OP_LONG:
        return read_number(w, &v, prog[pc] == OP_INT) < 0 ? -1 : pc + 1;
    case OP_FLOAT:
        return need(w, 4) < 0 || !float_canonical(w->p - 4) ? -1 : pc + 1;
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
    int64_t count;
    if (items_count(w, &count) < 0) goto fail;
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
    /* a key given twice is one entry: the bytes are not the dict's one encoding */
    if (items_end(w, count) < 0 || (keyed && PyDict_GET_SIZE(out) != count)) goto fail;
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
        return read_number(w, &v, prog[pc] == OP_INT) < 0 ? NULL : PyLong_FromLongLong(v);
    case OP_FLOAT:
        return (s = take(w, 4)) == NULL || !float_canonical(s) ? NULL
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

/* `pick(program, consts, data, count, ours, decide)`: of a block's `count` records, those
   whose table_id `ours` (a dict) maps to true, built, as ([their indices in the block],
   [the records]). A table_id not in `ours` yet (None when a record has none) is given
   `decide(table_id)`, stored in `ours`, in the order the records meet them. One walk
   finds each record's end and table, and only the picked are built: no object is made
   for another's record. None when the walk refuses the block or a picked record does not
   build (the caller reads the block whole); an error `decide` raises is raised. */
static PyObject *pick(PyObject *self, PyObject *args) {
    Py_buffer prog, data;
    PyObject *consts, *ours, *decide;
    Py_ssize_t count;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*O!y*nO!O", &prog, &PyTuple_Type, &consts, &data, &count,
                          &PyDict_Type, &ours, &decide))
        return NULL;
    PyObject *indices = NULL, *records = NULL, *result = NULL, *key = NULL;
    if (prog.len % 4 || count < 0 || count > data.len) goto refused;
    if ((indices = PyList_New(0)) == NULL || (records = PyList_New(0)) == NULL) goto done;
    const uint8_t *start = data.buf, *end = start + data.len;
    Build b = {{start, end, prog.buf, prog.len / 4, NULL, 0, 0}, consts};
    const uint8_t *last_key = NULL;  /* the previous record's table_id, and its answer */
    Py_ssize_t last_len = -2;  /* none yet: -1 is a record without one */
    int last_mine = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        const uint8_t *from = b.w.p;
        b.w.key = NULL;
        if (walk(&b.w, 0) < 0) goto refused;
        Py_ssize_t len = b.w.key == NULL ? -1 : b.w.key_len;
        int mine;
        if (len == last_len && (len <= 0 || memcmp(b.w.key, last_key, (size_t)len) == 0)) {
            mine = last_mine;
        } else {
            key = b.w.key == NULL ? Py_NewRef(Py_None)
                : PyUnicode_DecodeUTF8((const char *)b.w.key, len, "strict");
            if (key == NULL) goto refused;
            PyObject *known = PyDict_GetItemWithError(ours, key);  /* borrowed */
            if (known == NULL) {
                if (PyErr_Occurred()) goto done;
                PyObject *answer = PyObject_CallOneArg(decide, key);
                if (answer == NULL) goto done;
                int bad = PyDict_SetItem(ours, key, answer) < 0;
                mine = bad ? -1 : PyObject_IsTrue(answer);
                Py_DECREF(answer);
            } else {
                mine = PyObject_IsTrue(known);
            }
            Py_CLEAR(key);
            if (mine < 0) goto done;
            last_key = b.w.key;
            last_len = len;
            last_mine = mine;
        }
        if (!mine) continue;
        const uint8_t *after = b.w.p;
        Py_ssize_t ignored;
        b.w.p = from;
        PyObject *record = build(&b, 0, &ignored, 1);
        if (record == NULL) goto refused;
        PyObject *index = PyLong_FromSsize_t(i);
        int bad = index == NULL || PyList_Append(indices, index) < 0 ||
                  PyList_Append(records, record) < 0;
        Py_XDECREF(index);
        Py_DECREF(record);
        if (bad) goto done;
        if (b.w.p != after) goto refused;  /* the build and the walk disagree */
    }
    result = b.w.p == end ? PyTuple_Pack(2, indices, records) : Py_NewRef(Py_None);
    goto done;
refused:
    PyErr_Clear();
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(key);
    Py_XDECREF(indices);
    Py_XDECREF(records);
    PyBuffer_Release(&prog);
    PyBuffer_Release(&data);
    return result;
}

/* --- the JSON Lines body ------------------------------------------------------- */

/* `body(event)`: the event's JSON Lines form (`row_body(event)`: the same without "type"
   and the envelope but its prev_digest, an `events` row's body), byte for byte what
   `orjson.dumps(pitwatch.events.jsonl.to_json(event))` gives ("type", the envelope in
   its order, then the payload's slots; bytes as lowercase hex; a tuple as an array), or
   None for anything else it holds (a TableOpened's rules, a float, a list, a string
   that is not UTF-8, an int past 64 bits), which the caller then writes in Python. The
   store writes every event's body: in Python it was most of the cost of a row. */

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
    char small[1024];
} Out;

static int out_grow(Out *o, Py_ssize_t more) {
    if (o->len + more <= o->cap) return 0;
    Py_ssize_t cap = (o->len + more) * 2;
    char *b = o->buf == o->small ? PyMem_Malloc(cap) : PyMem_Realloc(o->buf, cap);
    if (b == NULL) return -1;
    if (o->buf == o->small) memcpy(b, o->small, o->len);
    o->buf = b;
    o->cap = cap;
    return 0;
}

static int out_raw(Out *o, const char *s, Py_ssize_t n) {
    if (out_grow(o, n) < 0) return -1;
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    return 0;
}

static void out_init(Out *o) {
    o->buf = o->small;
    o->len = 0;
    o->cap = sizeof o->small;
}

static void out_free(Out *o) {
    if (o->buf != o->small) PyMem_Free(o->buf);
    out_init(o);
}

static const char HEX_DIGITS[] = "0123456789abcdef";

/* a byte of a JSON string that orjson escapes: '"', '\\' and the controls */
static inline int escaped(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

/* a JSON string as orjson writes it, from its UTF-8: as is, `escaped` bytes escaped */
static int out_utf8(Out *o, const char *u, Py_ssize_t n) {
    Py_ssize_t plain = 0;
    while (plain < n && !escaped((unsigned char)u[plain])) plain++;
    if (out_grow(o, plain + (n - plain) * 6 + 2) < 0) return -1;
    char *d = o->buf + o->len;
    *d++ = '"';
    memcpy(d, u, plain);
    d += plain;
    for (Py_ssize_t i = plain; i < n; i++) {
        unsigned char c = (unsigned char)u[i];
        if (!escaped(c)) {
            *d++ = (char)c;
            continue;
        }
        *d++ = '\\';
        switch (c) {
        case '"': *d++ = '"'; break;
        case '\\': *d++ = '\\'; break;
        case '\b': *d++ = 'b'; break;
        case '\f': *d++ = 'f'; break;
        case '\n': *d++ = 'n'; break;
        case '\r': *d++ = 'r'; break;
        case '\t': *d++ = 't'; break;
        default:
            *d++ = 'u'; *d++ = '0'; *d++ = '0';
            *d++ = HEX_DIGITS[c >> 4]; *d++ = HEX_DIGITS[c & 15];
        }
    }
    *d++ = '"';
    o->len = d - o->buf;
    return 0;
}

/* a str as a JSON string */
static int out_text(Out *o, PyObject *s) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);  /* refuses lone surrogates */
    return u == NULL ? -1 : out_utf8(o, u, n);
}

/* `"name":`, for a name of __slots__ or the envelope: an identifier, nothing to escape */
static int out_key(Out *o, PyObject *name) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(name, &n);
    if (u == NULL || out_grow(o, n + 4) < 0) return -1;
    char *d = o->buf + o->len;
    *d++ = ',';
    *d++ = '"';
    memcpy(d, u, n);
    d += n;
    *d++ = '"';
    *d++ = ':';
    o->len = d - o->buf;
    return 0;
}

/* an integer in decimal: the magnitude, after a '-' when `negative` */
static int out_digits(Out *o, unsigned long long x, int negative) {
    char num[24], *e = num + sizeof num, *d = e;
    do {
        *--d = (char)('0' + x % 10);
        x /= 10;
    } while (x);
    if (negative) *--d = '-';
    return out_raw(o, d, e - d);
}

/* bytes as lowercase hex digits, between quotes when `quoted` */
static int out_hex_raw(Out *o, const unsigned char *b, Py_ssize_t n, int quoted) {
    if (out_grow(o, 2 * n + 2) < 0) return -1;
    char *d = o->buf + o->len;
    if (quoted) *d++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        *d++ = HEX_DIGITS[b[i] >> 4];
        *d++ = HEX_DIGITS[b[i] & 15];
    }
    if (quoted) *d++ = '"';
    o->len = d - o->buf;
    return 0;
}

static int out_hex(Out *o, PyObject *v, int quoted) {
    return out_hex_raw(o, (const unsigned char *)PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v),
                       quoted);
}

static int out_value(Out *o, PyObject *v, int in_array) {
    if (v == Py_None) return out_raw(o, "null", 4);
    if (v == Py_True) return out_raw(o, "true", 4);
    if (v == Py_False) return out_raw(o, "false", 5);
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow > 0) {  /* orjson writes up to 2**64 - 1 */
            unsigned long long ux = PyLong_AsUnsignedLongLong(v);
            if (ux == (unsigned long long)-1 && PyErr_Occurred()) return -1;
            return out_digits(o, ux, 0);
        }
        if (overflow < 0 || (x == -1 && PyErr_Occurred())) return -1;
        return x < 0 ? out_digits(o, 0ULL - (unsigned long long)x, 1) : out_digits(o, x, 0);
    }
    if (PyUnicode_CheckExact(v)) return out_text(o, v);
    if (PyTuple_CheckExact(v) && !in_array) {
        if (out_raw(o, "[", 1) < 0) return -1;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(v); i++) {
            if ((i && out_raw(o, ",", 1) < 0) || out_value(o, PyTuple_GET_ITEM(v, i), 1) < 0)
                return -1;
        }
        return out_raw(o, "]", 1);
    }
    return -1;  /* not a value this writer knows (bytes among them): Python writes it */
}

enum { PLAIN, HEX, HEX_OR_NONE };

/* `,"name":value` of obj's attribute; a HEX field is bytes, written as hex. */
static int out_field(Out *o, PyObject *obj, PyObject *name, int kind) {
    PyObject *v = slot_attr(obj, name);
    if (v == NULL) return -1;
    int r = -1;
    if (out_key(o, name) == 0) {
        if (kind == PLAIN || (kind == HEX_OR_NONE && v == Py_None))
            r = out_value(o, v, 0);
        else if (PyBytes_CheckExact(v))
            r = out_hex(o, v, 1);
    }
    Py_DECREF(v);
    return r;
}

static const char *ENVELOPE[] = {"event_id", "table_id", "device_id", "seq", "ts",
                                 "round_id", "prev_digest", NULL};
/* the payload fields written as hex (or null): Checkpoint's (jsonl._HEX, _HEX_OR_NULL) */
static const char *CHECKPOINT_HEX[] = {"head_digest", "signature", "schema_sha256", "order",
                                       NULL};
static PyObject *envelope_names[8], *hex_names[5], *payload_name, *slots_name,
    *checkpoint_name;

static int is_hex(PyObject *name) {
    for (int i = 0; hex_names[i] != NULL; i++) {
        if (PyUnicode_Compare(name, hex_names[i]) == 0) return 1;
    }
    return 0;
}

/* Appends the event's JSON Lines form to `o` or, `in_row`, its `events` row's body: the
   same without what the row's columns hold ("type" and the envelope but its
   prev_digest); -1 (an error set or not) where it holds what this writer does not write,
   the caller then undoing what was appended. */
static int write_body(Out *o, PyObject *ev, int in_row) {
    PyObject *payload = NULL, *slots = NULL, *type_name = NULL;
    int r = -1;
    if ((payload = slot_attr(ev, payload_name)) == NULL
        || (type_name = PyType_GetName(Py_TYPE(payload))) == NULL)
        goto done;
    int is_checkpoint = PyUnicode_Compare(type_name, checkpoint_name) == 0;
    if (in_row) {
        Py_ssize_t at = o->len;
        if (out_raw(o, "{", 1) < 0 || out_field(o, ev, envelope_names[6], HEX_OR_NONE) < 0)
            goto done;
        memmove(o->buf + at + 1, o->buf + at + 2, o->len - at - 2);  /* its comma */
        o->len--;
    } else {
        if (out_raw(o, "{\"type\":", 8) < 0 || out_text(o, type_name) < 0) goto done;
        for (int i = 0; envelope_names[i] != NULL; i++) {
            if (out_field(o, ev, envelope_names[i],
                          envelope_names[i + 1] == NULL ? HEX_OR_NONE : PLAIN) < 0)
                goto done;
        }
    }
    if ((slots = PyObject_GetAttr((PyObject *)Py_TYPE(payload), slots_name)) == NULL
        || !PyTuple_CheckExact(slots))
        goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(slots); i++) {
        PyObject *name = PyTuple_GET_ITEM(slots, i);
        if (!PyUnicode_CheckExact(name)
            || out_field(o, payload, name,
                         is_checkpoint && is_hex(name) ? HEX_OR_NONE : PLAIN) < 0)
            goto done;
    }
    r = out_raw(o, "}", 1);
done:
    Py_XDECREF(payload);
    Py_XDECREF(type_name);
    Py_XDECREF(slots);
    return r;
}

static PyObject *some_body(PyObject *ev, int in_row) {
    Out o = {NULL, 0, sizeof o.small, {0}};
    o.buf = o.small;
    PyObject *result;
    if (write_body(&o, ev, in_row) < 0) {
        PyErr_Clear();
        result = Py_NewRef(Py_None);
    } else {
        result = PyBytes_FromStringAndSize(o.buf, o.len);
    }
    if (o.buf != o.small) PyMem_Free(o.buf);
    return result;
}

static PyObject *body(PyObject *self, PyObject *ev) {
    (void)self;
    return some_body(ev, 0);
}

static PyObject *row_body(PyObject *self, PyObject *ev) {
    (void)self;
    return some_body(ev, 1);
}

/* --- the store's events columns ---------------------------------------------------- */

/* `event_columns(events, positions, fingerprint, body_of)`: a batch of the `events`
   table (schemas/clickhouse/001_events.sql) as Arrow buffers, the same values as
   `pitwatch.store.columns.event_values` gives row by row: a String column as (int32
   offsets, UTF-8 data), an integer column as its little-endian values. A body this
   file does not write is `body_of(event)`'s (an error it raises is raised). Returns
   None for any value its column's type cannot hold or the row's code does not expect
   (a negative seq, a bool, a seat past 255, a str that is not one...): the caller then
   builds the batch in Python, which names the value refused. */

/* The columns, their order and their ClickHouse types are pitwatch/store/columns.py's
   `EVENTS`; the module exports them as `EVENT_COLUMNS`, which tests/unit/test_events_row.py
   checks against that definition and the DDL. */
enum { K_STR, K_U8, K_I8, K_U16, K_U32, K_U64, K_I64 };
enum { C_EVENT_ID, C_TABLE_ID, C_DEVICE_ID, C_SEQ, C_TS, C_TS_MS, C_ROUND_ID, C_TYPE, C_SEAT,
       C_HAND, C_KIND, C_AMOUNT, C_POS, C_BODY, C_WRITER, N_COLUMNS };
static const struct { const char *name, *type; int kind; } COLUMNS[N_COLUMNS] = {
    {"event_id", "String", K_STR}, {"table_id", "String", K_STR},
    {"device_id", "String", K_STR}, {"seq", "UInt64", K_U64}, {"ts", "DateTime", K_U32},
    {"ts_ms", "UInt16", K_U16}, {"round_id", "String", K_STR}, {"type", "String", K_STR},
    {"seat", "UInt8", K_U8}, {"hand", "Int8", K_I8}, {"kind", "String", K_STR},
    {"amount", "Int64", K_I64}, {"pos", "UInt64", K_U64}, {"body", "String", K_STR},
    {"writer", "String", K_STR},
};
static PyObject *column_attr[N_COLUMNS], *writer_name, *zero, *empty;

typedef struct {
    Out data[N_COLUMNS], offsets[N_COLUMNS];
} Columns;

static int put_offset(Columns *c, int col) {
    if (c->data[col].len > INT32_MAX) return -1;
    int32_t at = (int32_t)c->data[col].len;
    return out_raw(&c->offsets[col], (const char *)&at, 4);
}

static int put_str(Columns *c, int col, PyObject *v) {
    Py_ssize_t n;
    const char *u;
    if (!PyUnicode_CheckExact(v) || (u = PyUnicode_AsUTF8AndSize(v, &n)) == NULL) return -1;
    return out_raw(&c->data[col], u, n) < 0 ? -1 : put_offset(c, col);
}

/* an exact int in [lo, hi] (hi past INT64_MAX: as unsigned), written in `size` bytes */
static int put_int(Columns *c, int col, PyObject *v, int64_t lo, uint64_t hi, int size) {
    if (!PyLong_CheckExact(v)) return -1;
    uint64_t u;
    if (lo < 0) {
        int64_t x = PyLong_AsLongLong(v);
        if ((x == -1 && PyErr_Occurred()) || x < lo || x > (int64_t)hi) return -1;
        u = (uint64_t)x;
    } else {
        u = PyLong_AsUnsignedLongLong(v);
        if ((u == (uint64_t)-1 && PyErr_Occurred()) || u > hi) return -1;
    }
    return out_raw(&c->data[col], (const char *)&u, size);  /* little-endian: low bytes */
}

/* the payload's attribute, or `dflt` where it has none (a new reference), without the
   cost of making an AttributeError for most events (a card has no amount) */
static PyObject *attr_or(PyObject *obj, PyObject *name, PyObject *dflt) {
    PyObject *v;
    if (slot_lookup(obj, name, &v)) return v;
#if PY_VERSION_HEX >= 0x030D0000
    int found = PyObject_GetOptionalAttr(obj, name, &v);
#else
    int found = _PyObject_LookupAttr(obj, name, &v);
#endif
    return found < 0 ? NULL : found ? v : Py_NewRef(dflt);
}

static int put_event(Columns *c, PyObject *ev, PyObject *pos, PyObject *fingerprint,
                     PyObject *body_of) {
    PyObject *v[N_COLUMNS] = {NULL}, *payload = NULL;
    int r = -1;
    for (int i = C_EVENT_ID; i <= C_DEVICE_ID; i++) {
        if ((v[i] = slot_attr(ev, column_attr[i])) == NULL
            || put_str(c, i, v[i]) < 0)
            goto done;
    }
    if ((v[C_SEQ] = slot_attr(ev, column_attr[C_SEQ])) == NULL
        || put_int(c, C_SEQ, v[C_SEQ], 0, UINT64_MAX, 8) < 0)
        goto done;
    if ((v[C_TS] = slot_attr(ev, column_attr[C_TS])) == NULL
        || !PyLong_CheckExact(v[C_TS]))
        goto done;
    {
        long long ts = PyLong_AsLongLong(v[C_TS]);
        if ((ts == -1 && PyErr_Occurred()) || ts < 0 || ts / 1000 > UINT32_MAX) goto done;
        uint32_t secs = (uint32_t)(ts / 1000);
        uint16_t ms = (uint16_t)(ts % 1000);
        if (out_raw(&c->data[C_TS], (const char *)&secs, 4) < 0
            || out_raw(&c->data[C_TS_MS], (const char *)&ms, 2) < 0)
            goto done;
    }
    if ((v[C_ROUND_ID] = slot_attr(ev, column_attr[C_ROUND_ID])) == NULL) goto done;
    if (v[C_ROUND_ID] == Py_None) {
        if (put_offset(c, C_ROUND_ID) < 0) goto done;
    } else if (put_str(c, C_ROUND_ID, v[C_ROUND_ID]) < 0) {
        goto done;
    }
    if ((payload = slot_attr(ev, payload_name)) == NULL
        || (v[C_TYPE] = PyType_GetName(Py_TYPE(payload))) == NULL
        || put_str(c, C_TYPE, v[C_TYPE]) < 0)
        goto done;
    v[C_SEAT] = attr_or(payload, column_attr[C_SEAT], zero);
    v[C_HAND] = attr_or(payload, column_attr[C_HAND], Py_None);
    v[C_KIND] = attr_or(payload, column_attr[C_KIND], empty);
    v[C_AMOUNT] = attr_or(payload, column_attr[C_AMOUNT], zero);
    if (v[C_SEAT] == NULL || v[C_HAND] == NULL || v[C_KIND] == NULL || v[C_AMOUNT] == NULL
        || put_int(c, C_SEAT, v[C_SEAT] == Py_None ? zero : v[C_SEAT], 0, 255, 1) < 0)
        goto done;
    if (v[C_HAND] == Py_None) {
        int8_t none = -1;
        if (out_raw(&c->data[C_HAND], (const char *)&none, 1) < 0) goto done;
    } else if (put_int(c, C_HAND, v[C_HAND], -128, 127, 1) < 0) {
        goto done;
    }
    if (put_str(c, C_KIND, v[C_KIND]) < 0
        || put_int(c, C_AMOUNT, v[C_AMOUNT], INT64_MIN, INT64_MAX, 8) < 0
        || put_int(c, C_POS, pos, 0, UINT64_MAX, 8) < 0)
        goto done;
    Py_ssize_t at = c->data[C_BODY].len;
    if (write_body(&c->data[C_BODY], ev, 1) < 0) {
        PyErr_Clear();
        c->data[C_BODY].len = at;
        PyObject *line = PyObject_CallOneArg(body_of, ev);
        if (line == NULL) {
            r = -2;  /* raised: the caller raises it */
            goto done;
        }
        int bad = !PyBytes_Check(line)
                  || out_raw(&c->data[C_BODY], PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line)) < 0;
        Py_DECREF(line);
        if (bad) goto done;
    }
    if (put_offset(c, C_BODY) < 0) goto done;
    if ((v[C_WRITER] = slot_attr(ev, writer_name)) == NULL) goto done;
    if (PyBytes_CheckExact(v[C_WRITER]) && PyBytes_GET_SIZE(v[C_WRITER]) > 0) {
        if (out_hex(&c->data[C_WRITER], v[C_WRITER], 0) < 0 || put_offset(c, C_WRITER) < 0)
            goto done;
    } else if (v[C_WRITER] != Py_None && !PyBytes_CheckExact(v[C_WRITER])) {
        goto done;
    } else if (put_str(c, C_WRITER, fingerprint) < 0) {
        goto done;
    }
    r = 0;
done:
    for (int i = 0; i < N_COLUMNS; i++) Py_XDECREF(v[i]);
    Py_XDECREF(payload);
    return r;
}

static Columns *columns_new(void) {
    Columns *c = PyMem_Calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    for (int i = 0; i < N_COLUMNS; i++) {
        c->data[i].buf = c->data[i].small;
        c->data[i].cap = sizeof c->data[i].small;
        c->offsets[i].buf = c->offsets[i].small;
        c->offsets[i].cap = sizeof c->offsets[i].small;
        if (COLUMNS[i].kind == K_STR) {
            int32_t none = 0;
            memcpy(c->offsets[i].buf, &none, 4);  /* a String column's first offset */
            c->offsets[i].len = 4;
        }
    }
    return c;
}

static void columns_free(Columns *c) {
    if (c == NULL) return;
    for (int i = 0; i < N_COLUMNS; i++) {
        if (c->data[i].buf != c->data[i].small) PyMem_Free(c->data[i].buf);
        if (c->offsets[i].buf != c->offsets[i].small) PyMem_Free(c->offsets[i].buf);
    }
    PyMem_Free(c);
}

/* the columns as `event_columns` returns them */
static PyObject *columns_tuple(Columns *c) {
    PyObject *result = PyTuple_New(N_COLUMNS);
    if (result == NULL) return NULL;
    for (int i = 0; i < N_COLUMNS; i++) {
        PyObject *col = COLUMNS[i].kind == K_STR
            ? Py_BuildValue("(y#y#)", c->offsets[i].buf, c->offsets[i].len,
                            c->data[i].buf, c->data[i].len)
            : PyBytes_FromStringAndSize(c->data[i].buf, c->data[i].len);
        if (col == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyTuple_SET_ITEM(result, i, col);
    }
    return result;
}

static void columns_mark(Columns *c, Py_ssize_t *data, Py_ssize_t *offsets) {
    for (int i = 0; i < N_COLUMNS; i++) {
        data[i] = c->data[i].len;
        offsets[i] = c->offsets[i].len;
    }
}

static void columns_reset(Columns *c, const Py_ssize_t *data, const Py_ssize_t *offsets) {
    for (int i = 0; i < N_COLUMNS; i++) {
        c->data[i].len = data[i];
        c->offsets[i].len = offsets[i];
    }
}

/* `put_event`, or nothing at all: where it refuses the event (-1) or raises (-2), every
   column is put back as it was before */
static int put_whole_event(Columns *c, PyObject *ev, PyObject *pos, PyObject *fingerprint,
                           PyObject *body_of) {
    Py_ssize_t data[N_COLUMNS], offsets[N_COLUMNS];
    columns_mark(c, data, offsets);
    int r = put_event(c, ev, pos, fingerprint, body_of);
    if (r < 0) columns_reset(c, data, offsets);
    return r;
}

static PyObject *event_columns(PyObject *self, PyObject *args) {
    PyObject *events, *positions, *fingerprint, *body_of, *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O!UO", &PyList_Type, &events, &PyList_Type, &positions,
                          &fingerprint, &body_of))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(events);
    if (PyList_GET_SIZE(positions) != n) {
        PyErr_SetString(PyExc_ValueError, "as many positions as events");
        return NULL;
    }
    Columns *c = columns_new();
    if (c == NULL) return PyErr_NoMemory();
    for (Py_ssize_t k = 0; k < n; k++) {
        int r = put_event(c, PyList_GET_ITEM(events, k), PyList_GET_ITEM(positions, k),
                          fingerprint, body_of);
        if (r == -2) goto done;
        if (r < 0) {
            PyErr_Clear();
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    result = columns_tuple(c);
done:
    columns_free(c);
    return result;
}

/* `EventRows(fingerprint, body_of)`: the rows of the `events` table written one event at
   a time as the events come (`add`), while each is still in the cache the audit just
   read it into, rather than a batch at a time long after; `take` gives the rows so far
   as `event_columns` gives a batch's, and starts again. An event `add` does not write
   (what `event_columns` refuses a batch for) leaves the rows as they were: False. */
typedef struct {
    PyObject_HEAD
    Columns *c;
    PyObject *fingerprint, *body_of;
    Py_ssize_t rows;
    int busy; /* writing a row: `body_of` may not take or reset the rows meanwhile */
} EventRows;

static int rows_free_to_change(EventRows *r) {
    if (!r->busy) return 1;
    PyErr_SetString(PyExc_RuntimeError, "EventRows changed while it writes a row");
    return 0;
}

static int rows_init(EventRows *r, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"fingerprint", "body_of", NULL};
    PyObject *fingerprint, *body_of;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UO", kwlist, &fingerprint, &body_of)
        || !rows_free_to_change(r))
        return -1;
    Columns *c = columns_new();
    if (c == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    columns_free(r->c);
    r->c = c;
    r->rows = 0;
    Py_XSETREF(r->fingerprint, Py_NewRef(fingerprint));
    Py_XSETREF(r->body_of, Py_NewRef(body_of));
    return 0;
}

static void rows_dealloc(EventRows *r) {
    columns_free(r->c);
    Py_XDECREF(r->fingerprint);
    Py_XDECREF(r->body_of);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *rows_add(EventRows *r, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "add(event, position)");
        return NULL;
    }
    if (r->c == NULL) {
        PyErr_SetString(PyExc_ValueError, "EventRows not initialised");
        return NULL;
    }
    if (!rows_free_to_change(r)) return NULL;
    r->busy = 1;
    int res = put_whole_event(r->c, args[0], args[1], r->fingerprint, r->body_of);
    r->busy = 0;
    if (res == -2) return NULL;
    if (res < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    r->rows++;
    Py_RETURN_TRUE;
}

static PyObject *rows_take(EventRows *r, PyObject *unused) {
    (void)unused;
    if (r->c == NULL) {
        PyErr_SetString(PyExc_ValueError, "EventRows not initialised");
        return NULL;
    }
    if (!rows_free_to_change(r)) return NULL;
    Columns *fresh = columns_new();
    if (fresh == NULL) return PyErr_NoMemory();
    PyObject *result = columns_tuple(r->c);
    if (result == NULL) {
        columns_free(fresh);
        return NULL;
    }
    columns_free(r->c);
    r->c = fresh;
    r->rows = 0;
    return result;
}

static Py_ssize_t rows_len(EventRows *r) { return r->rows; }

/* `add_avro(program, consts, data, lengths, positions)`: the rows of a batch of events
   given as this schema's Avro bytes joined (each record's length a uint32 in `lengths`,
   its position a uint64 in `positions`; what `EventBytes.take` gives), written straight
   from the bytes: no event is built, yet each row is the one `add` writes for the event
   `build` makes of those bytes, its body byte for byte. An event this walk does not
   write (a TableOpened's rules, a float, bytes outside Checkpoint's hex fields, a value
   a column cannot hold...) is built (`build`) and given to `add`; one `add` refuses too
   is returned with its position, for the caller to write in Python. None: the bytes
   are not records this program reads, and nothing is written. */

enum { V_OTHER, V_NULL, V_INT, V_STR };
typedef struct {
    int kind;
    int64_t i;
    const char *s;
    Py_ssize_t n;
} Scalar;

/* what a payload record type is written with, found at its first event of a batch */
#define MAX_BRANCHES 64
typedef struct {
    int state;             /* 0: not looked at; 1: written here; -1: built, then `add` */
    PyObject *type_name;   /* held */
    PyObject *slots;       /* held: its fields' names, in the schema's order */
    int8_t column[MAX_FIELDS]; /* the column a field also fills (C_SEAT...), or -1 */
    int8_t mode[MAX_FIELDS];   /* PLAIN, or HEX: Checkpoint's hex fields */
} Branch;

typedef struct {
    Build b;
    Out *body;
    Branch branches[MAX_BRANCHES];
} Direct;

static int direct_value(Direct *d, Py_ssize_t pc, Py_ssize_t *next, int mode, int in_array,
                        Scalar *sc);

static int direct_items(Direct *d, Py_ssize_t item) {
    Walk *w = &d->b.w;
    int first = 1;
    int64_t count;
    if (out_raw(d->body, "[", 1) < 0 || items_count(w, &count) < 0) return -1;
    for (int64_t i = 0; i < count; i++) {
        Py_ssize_t ignored;
        Scalar sc;
        if ((!first && out_raw(d->body, ",", 1) < 0)
            || direct_value(d, item, &ignored, PLAIN, 1, &sc) < 0)
            return -1;
        first = 0;
    }
    return items_end(w, count) < 0 ? -1 : out_raw(d->body, "]", 1);
}

/* The node at pc as JSON (what out_value writes of what `build` makes of it), with the
   pc after it in *next, and in *sc the scalar it is (for the columns); -1 where this
   walk does not write it. A HEX field is bytes; HEX_OR_NONE, bytes or null. */
static int direct_value(Direct *d, Py_ssize_t pc, Py_ssize_t *next, int mode, int in_array,
                        Scalar *sc) {
    Walk *w = &d->b.w;
    const int32_t *prog = w->prog;
    Out *o = d->body;
    int64_t v;
    const uint8_t *s;
    if (pc < 0 || pc >= w->len) return -1;
    *next = pc + 1;
    sc->kind = V_OTHER;
    int op = prog[pc];
    if (mode != PLAIN && op != OP_NULL && op != OP_BYTES && op != OP_UNION && op != OP_REF)
        return -1;
    switch (op) {
    case OP_NULL:
        if (mode == HEX) return -1;
        sc->kind = V_NULL;
        return out_raw(o, "null", 4);
    case OP_BOOLEAN:
        if ((s = take(w, 1)) == NULL || *s > 1) return -1;
        return *s ? out_raw(o, "true", 4) : out_raw(o, "false", 5);
    case OP_INT:
    case OP_LONG:
        if (read_number(w, &v, op == OP_INT) < 0) return -1;
        sc->kind = V_INT;
        sc->i = v;
        return v < 0 ? out_digits(o, 0ULL - (unsigned long long)v, 1)
                     : out_digits(o, (unsigned long long)v, 0);
    case OP_BYTES:
        if (mode == PLAIN || read_long(w, &v) < 0 || (s = take(w, v)) == NULL) return -1;
        return out_hex_raw(o, s, (Py_ssize_t)v, 1);
    case OP_STRING:
    case OP_KEY:
        if (read_long(w, &v) < 0 || (s = take(w, v)) == NULL || !utf8_valid(s, v)) return -1;
        sc->kind = V_STR;
        sc->s = (const char *)s;
        sc->n = (Py_ssize_t)v;
        return out_utf8(o, sc->s, sc->n);
    case OP_ENUM: {
        if (pc + 2 >= w->len) return -1;
        PyObject *values = constant(&d->b, prog[pc + 2]);
        if (values == NULL || !PyTuple_Check(values) || read_long(w, &v) < 0 || v < 0
            || v >= prog[pc + 1] || v >= PyTuple_GET_SIZE(values))
            return -1;
        *next = pc + 3;
        PyObject *value = PyTuple_GET_ITEM(values, v);
        if (!PyUnicode_CheckExact(value)
            || (sc->s = PyUnicode_AsUTF8AndSize(value, &sc->n)) == NULL)
            return -1;
        sc->kind = V_STR;
        return out_utf8(o, sc->s, sc->n);
    }
    case OP_UNION: {
        Py_ssize_t ignored;
        if (pc + 2 >= w->len || read_long(w, &v) < 0 || v < 0 || v >= prog[pc + 1]
            || pc + 3 + v >= w->len)
            return -1;
        *next = prog[pc + 2];
        return direct_value(d, prog[pc + 3 + v], &ignored, mode, in_array, sc);
    }
    case OP_ARRAY:
        if (in_array || pc + 1 >= w->len) return -1;
        *next = prog[pc + 1];
        return direct_items(d, pc + 2);
    case OP_REF: {
        Py_ssize_t ignored;
        if (pc + 1 >= w->len || w->depth >= MAX_REF_DEPTH) return -1;
        w->depth++;
        int r = direct_value(d, prog[pc + 1], &ignored, mode, in_array, sc);
        w->depth--;
        *next = pc + 2;
        return r;
    }
    default: /* a float, fixed bytes, a record, a map: the built event's writer decides */
        return -1;
    }
}

/* The payload record type of branch v (its record at rpc) as `add` writes it: its
   builder a type whose __slots__ are its fields, none of the columns' names an
   attribute of the type that is not one of them. */
static Branch *direct_branch(Direct *d, int64_t v, Py_ssize_t rpc) {
    if (v < 0 || v >= MAX_BRANCHES) return NULL;
    Branch *br = &d->branches[v];
    if (br->state == 0) {
        const int32_t *prog = d->b.w.prog;
        PyObject *builder = constant(&d->b, prog[rpc + 2]), *slots = NULL;
        br->state = -1;
        if (prog[rpc + 1] > MAX_FIELDS || builder == NULL || !PyType_Check(builder)
            || (slots = PyObject_GetAttr(builder, slots_name)) == NULL
            || !PyTuple_CheckExact(slots) || PyTuple_GET_SIZE(slots) != prog[rpc + 1]) {
            PyErr_Clear();
            Py_XDECREF(slots);
            return br;
        }
        PyObject *name = PyType_GetName((PyTypeObject *)builder);
        if (name == NULL) {
            PyErr_Clear();
            Py_DECREF(slots);
            return br;
        }
        int checkpoint = PyUnicode_Compare(name, checkpoint_name) == 0, ok = 1;
        for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(slots); i++) {
            PyObject *field = PyTuple_GET_ITEM(slots, i);
            ok = PyUnicode_CheckExact(field);
            br->column[i] = -1;
            br->mode[i] = ok && checkpoint && is_hex(field) ? HEX_OR_NONE : PLAIN;
            for (int k = C_SEAT; ok && k <= C_AMOUNT; k++)
                if (PyUnicode_Compare(field, column_attr[k]) == 0) br->column[i] = (int8_t)k;
        }
        for (int k = C_SEAT; ok && k <= C_AMOUNT; k++) {
            int in_slots = PySequence_Contains(slots, column_attr[k]);
            ok = in_slots == 1 || (in_slots == 0 && !PyObject_HasAttr(builder, column_attr[k]));
        }
        PyErr_Clear();
        if (ok) {
            br->state = 1;
            br->type_name = name;
            br->slots = slots;
        } else {
            Py_DECREF(name);
            Py_DECREF(slots);
        }
    }
    return br;
}

static void direct_free(Direct *d) {
    for (int i = 0; i < MAX_BRANCHES; i++) {
        Py_CLEAR(d->branches[i].type_name);
        Py_CLEAR(d->branches[i].slots);
    }
}

/* an int column's value from a scalar: an int in [lo, hi], or `none` for a field the
   payload lacks (absent) or holds null (when `null_ok`) */
static int direct_int(Columns *c, int col, const Scalar *sc, int absent, int64_t none,
                      int null_ok, int64_t lo, int64_t hi, int size) {
    int64_t x;
    if (absent || (null_ok && sc->kind == V_NULL)) x = none;
    else if (sc->kind == V_INT && sc->i >= lo && sc->i <= hi) x = sc->i;
    else return -1;
    return out_raw(&c->data[col], (const char *)&x, size);  /* little-endian: low bytes */
}

static int direct_str(Columns *c, int col, const Scalar *sc) {
    if (sc->kind != V_STR) return -1;
    return out_raw(&c->data[col], sc->s, sc->n) < 0 ? -1 : put_offset(c, col);
}

/* One record's row, written from its bytes into c (the caller puts the columns back
   as they were when it refuses: -1). The envelope's fields are the top record's first
   seven, in ENVELOPE's order, and its payload the eighth (`direct_rows` checks). */
static int direct_event(Direct *d, Columns *c, Out *envelope, uint64_t pos,
                        PyObject *fingerprint) {
    const int32_t *prog = d->b.w.prog;
    Scalar env[7], pay[MAX_FIELDS];
    Py_ssize_t pc = 3, digest_at = 0;
    envelope->len = 0;
    d->body = envelope;
    for (int i = 0; i < 7; i++) {
        if (i == 6) digest_at = envelope->len;
        if (out_key(envelope, envelope_names[i]) < 0
            || direct_value(d, pc, &pc, i == 6 ? HEX_OR_NONE : PLAIN, 0, &env[i]) < 0)
            return -1;
    }
    for (int i = C_EVENT_ID; i <= C_DEVICE_ID; i++)
        if (direct_str(c, i, &env[i]) < 0) return -1;
    if (env[3].kind != V_INT || env[3].i < 0 || env[4].kind != V_INT || env[4].i < 0
        || env[4].i / 1000 > UINT32_MAX)
        return -1;
    uint32_t secs = (uint32_t)(env[4].i / 1000);
    uint16_t ms = (uint16_t)(env[4].i % 1000);
    if (out_raw(&c->data[C_SEQ], (const char *)&env[3].i, 8) < 0
        || out_raw(&c->data[C_TS], (const char *)&secs, 4) < 0
        || out_raw(&c->data[C_TS_MS], (const char *)&ms, 2) < 0)
        return -1;
    if (env[5].kind == V_NULL ? put_offset(c, C_ROUND_ID) < 0
                              : direct_str(c, C_ROUND_ID, &env[5]) < 0)
        return -1;
    /* the payload: a union of records */
    int64_t v;
    Walk *w = &d->b.w;
    if (prog[pc] != OP_UNION || pc + 2 >= w->len || read_long(w, &v) < 0 || v < 0
        || v >= prog[pc + 1] || pc + 3 + v >= w->len)
        return -1;
    Py_ssize_t rpc = prog[pc + 3 + v];
    if (rpc < 0 || rpc + 2 >= w->len || prog[rpc] != OP_RECORD) return -1;
    Branch *br = direct_branch(d, v, rpc);
    if (br == NULL || br->state != 1) return -1;
    Out *body = &c->data[C_BODY];
    d->body = body;
    if (put_str(c, C_TYPE, br->type_name) < 0
        || out_raw(body, "{", 1) < 0  /* the prev_digest, without its comma */
        || out_raw(body, envelope->buf + digest_at + 1, envelope->len - digest_at - 1) < 0)
        return -1;
    int field_of[N_COLUMNS];
    for (int k = 0; k < N_COLUMNS; k++) field_of[k] = -1;
    Py_ssize_t fpc = rpc + 3;
    for (int32_t i = 0; i < prog[rpc + 1]; i++) {
        if (out_key(body, PyTuple_GET_ITEM(br->slots, i)) < 0
            || direct_value(d, fpc, &fpc, br->mode[i], 0, &pay[i]) < 0)
            return -1;
        if (br->column[i] >= 0) field_of[br->column[i]] = i;
    }
    static const Scalar none = {V_OTHER, 0, NULL, 0};
#define FIELD(col) (field_of[col] < 0 ? &none : &pay[field_of[col]])
    if (out_raw(body, "}", 1) < 0 || put_offset(c, C_BODY) < 0
        || direct_int(c, C_SEAT, FIELD(C_SEAT), field_of[C_SEAT] < 0, 0, 1, 0, 255, 1) < 0
        || direct_int(c, C_HAND, FIELD(C_HAND), field_of[C_HAND] < 0, -1, 1, -128, 127, 1) < 0
        || (field_of[C_KIND] < 0 ? put_offset(c, C_KIND) : direct_str(c, C_KIND, FIELD(C_KIND))) < 0
        || direct_int(c, C_AMOUNT, FIELD(C_AMOUNT), field_of[C_AMOUNT] < 0, 0, 0,
                      INT64_MIN, INT64_MAX, 8) < 0
        || out_raw(&c->data[C_POS], (const char *)&pos, 8) < 0
        || put_str(c, C_WRITER, fingerprint) < 0)
        return -1;
#undef FIELD
    return 0;
}

/* whether the top record is the envelope's seven fields then the payload, built by a
   type whose first slots are theirs (the model's Event) */
static int direct_top(Direct *d) {
    const int32_t *prog = d->b.w.prog;
    if (d->b.w.len < 3 || prog[0] != OP_RECORD || prog[1] != 8) return 0;
    PyObject *builder = constant(&d->b, prog[2]), *slots = NULL;
    int ok = builder != NULL && PyType_Check(builder)
             && (slots = PyObject_GetAttr(builder, slots_name)) != NULL
             && PyTuple_CheckExact(slots) && PyTuple_GET_SIZE(slots) >= 8;
    for (int i = 0; ok && i < 8; i++)
        ok = PyUnicode_Compare(PyTuple_GET_ITEM(slots, i),
                               i < 7 ? envelope_names[i] : payload_name) == 0;
    PyErr_Clear();
    Py_XDECREF(slots);
    return ok;
}

/* The record at [at, at + len) built and given to `add`: 0 written, 1 appended to
   `left` with its position, -1 raised, -2 refused (not one record of these bytes). */
static int direct_built(EventRows *r, Direct *d, const uint8_t *at, uint32_t len,
                        uint64_t pos, PyObject *left) {
    Py_ssize_t next;
    d->b.w.p = at;
    d->b.w.depth = 0;
    PyObject *ev = build(&d->b, 0, &next, 1), *p = NULL;
    if (ev == NULL || d->b.w.p != at + len) {
        Py_XDECREF(ev);
        PyErr_Clear();
        return -2;
    }
    int res = -1;
    if ((p = PyLong_FromUnsignedLongLong(pos)) == NULL) goto done;
    res = put_whole_event(r->c, ev, p, r->fingerprint, r->body_of);
    if (res == -2) {
        res = -1;
    } else if (res < 0) {
        PyErr_Clear();
        PyObject *pair = PyTuple_Pack(2, ev, p);
        res = pair == NULL || PyList_Append(left, pair) < 0 ? -1 : 1;
        Py_XDECREF(pair);
    }
done:
    Py_DECREF(ev);
    Py_XDECREF(p);
    return res;
}

static PyObject *rows_add_avro(EventRows *r, PyObject *args) {
    Py_buffer prog, data, lengths, positions;
    PyObject *consts, *left = NULL, *result = NULL;
    if (r->c == NULL) {
        PyErr_SetString(PyExc_ValueError, "EventRows not initialised");
        return NULL;
    }
    if (!rows_free_to_change(r)
        || !PyArg_ParseTuple(args, "y*O!y*y*y*", &prog, &PyTuple_Type, &consts, &data,
                             &lengths, &positions))
        return NULL;
    r->busy = 1;
    Columns *c = r->c;
    Py_ssize_t data0[N_COLUMNS], offsets0[N_COLUMNS], rows0 = r->rows, count = lengths.len / 4;
    columns_mark(c, data0, offsets0);
    Out envelope;
    out_init(&envelope);
    Direct *d = PyMem_Calloc(1, sizeof *d);
    if (d == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (prog.len % 4 || lengths.len % 4 || positions.len != count * 8) goto refused;
    const uint8_t *at = data.buf, *end = at + data.len;
    d->b = (Build){{at, end, prog.buf, prog.len / 4, NULL, 0, 0}, consts};
    int top = direct_top(d);
    if ((left = PyList_New(0)) == NULL) goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint32_t len;
        uint64_t pos;
        memcpy(&len, (const char *)lengths.buf + 4 * i, 4);
        memcpy(&pos, (const char *)positions.buf + 8 * i, 8);
        if (len > end - at) goto refused;
        Py_ssize_t data1[N_COLUMNS], offsets1[N_COLUMNS];
        columns_mark(c, data1, offsets1);
        d->b.w.p = at;
        d->b.w.end = at + len;
        d->b.w.depth = 0;
        if (top && direct_event(d, c, &envelope, pos, r->fingerprint) == 0
            && d->b.w.p == at + len) {
            r->rows++;
        } else {
            PyErr_Clear();
            columns_reset(c, data1, offsets1);
            int res = direct_built(r, d, at, len, pos, left);
            if (res == -1) goto done;
            if (res == -2) goto refused;
            if (res == 0) r->rows++;
        }
        at += len;
    }
    if (at != end) goto refused;
    result = Py_NewRef(left);
    goto done;
refused:
    PyErr_Clear();
    result = Py_NewRef(Py_None);
done:
    r->busy = 0;
    if (result != left) {  /* refused or raised: the rows as they were */
        columns_reset(c, data0, offsets0);
        r->rows = rows0;
    }
    if (d != NULL) {
        direct_free(d);
        PyMem_Free(d);
    }
    out_free(&envelope);
    Py_XDECREF(left);
    PyBuffer_Release(&prog);
    PyBuffer_Release(&data);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&positions);
    return result;
}

static PyObject *rows_add_at(EventRows *r, PyObject *const *args, Py_ssize_t nargs);

static PyMethodDef rows_methods[] = {
    {"add", (PyCFunction)(void (*)(void))rows_add, METH_FASTCALL,
     "add(event, position) -> bool: the event's row written (False: not, nothing written)"},
    {"add_at", (PyCFunction)(void (*)(void))rows_add_at, METH_FASTCALL,
     "add_at(clock, event) -> int | None: the event at its position on clock, its row "
     "written (None), or its position when not (the caller keeps it)"},
    {"take", (PyCFunction)rows_take, METH_NOARGS,
     "take() -> tuple: the rows so far, as event_columns gives them; then none"},
    {"add_avro", (PyCFunction)rows_add_avro, METH_VARARGS,
     "add_avro(program, consts, data, lengths, positions) -> list | None: rows written "
     "straight from Avro bytes; the (event, position) pairs not written (None: refused)"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods rows_as_sequence = {.sq_length = (lenfunc)rows_len};

static PyTypeObject EventRowsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pitwatch.events._native.EventRows",
    .tp_doc = "EventRows(fingerprint, body_of): the events table's rows, an event at a time",
    .tp_basicsize = sizeof(EventRows),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)rows_init,
    .tp_dealloc = (destructor)rows_dealloc,
    .tp_methods = rows_methods,
    .tp_as_sequence = &rows_as_sequence,
};

/* `EventBytes(rows)`: the events of a batch as a process of their store takes them
   (pitwatch/store/process.py): an event decoded from this schema's Avro bytes (its `raw`
   set and its `writer` None) kept as those bytes, their length and its position, for
   the store's process to build it again; any other handed to `rows` (an EventRows, or
   None: False, and the caller keeps it). `take` gives (the bytes joined, their lengths
   as uint32, the positions as uint64, how many, `rows.take()` or None, its rows) and
   starts again; its buffers are kept for the next batch. */
typedef struct {
    PyObject_HEAD
    Out data, lengths, positions;
    PyObject *rows; /* an EventRows, or None */
    Py_ssize_t n;
} EventBytes;

static PyObject *raw_name;

static int bytes_init(EventBytes *b, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"rows", NULL};
    PyObject *rows;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", kwlist, &rows)) return -1;
    if (rows != Py_None && !Py_IS_TYPE(rows, &EventRowsType)) {
        PyErr_SetString(PyExc_TypeError, "EventBytes(rows): an EventRows or None");
        return -1;
    }
    out_free(&b->data);
    out_free(&b->lengths);
    out_free(&b->positions);
    b->n = 0;
    Py_XSETREF(b->rows, Py_NewRef(rows));
    return 0;
}

static PyObject *bytes_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    (void)args;
    (void)kwds;
    EventBytes *b = (EventBytes *)type->tp_alloc(type, 0);
    if (b == NULL) return NULL;
    out_init(&b->data);
    out_init(&b->lengths);
    out_init(&b->positions);
    b->rows = NULL;
    return (PyObject *)b;
}

static void bytes_dealloc(EventBytes *b) {
    out_free(&b->data);
    out_free(&b->lengths);
    out_free(&b->positions);
    Py_XDECREF(b->rows);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

static PyObject *bytes_add(EventBytes *b, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "add(event, position)");
        return NULL;
    }
    if (b->rows == NULL) {
        PyErr_SetString(PyExc_ValueError, "EventBytes not initialised");
        return NULL;
    }
    /* at their slots where the cache finds them, else by getattr (slot_attr) */
    PyObject *raw = slot_attr(args[0], raw_name), *writer = NULL;
    if (raw != NULL && PyBytes_CheckExact(raw) && PyBytes_GET_SIZE(raw) <= UINT32_MAX)
        writer = slot_attr(args[0], writer_name);
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            Py_XDECREF(raw);
            return NULL;
        }
        PyErr_Clear(); /* not an event with its bytes: the rows' to judge */
    }
    int mine = writer == Py_None;
    Py_XDECREF(writer);
    if (mine) {
        uint64_t pos = PyLong_AsUnsignedLongLong(args[1]);
        uint32_t len = (uint32_t)PyBytes_GET_SIZE(raw);
        if ((pos == (uint64_t)-1 && PyErr_Occurred())
            || out_raw(&b->data, PyBytes_AS_STRING(raw), len) < 0
            || out_raw(&b->lengths, (const char *)&len, sizeof len) < 0
            || out_raw(&b->positions, (const char *)&pos, sizeof pos) < 0) {
            Py_DECREF(raw);
            return PyErr_Occurred() ? NULL : PyErr_NoMemory();
        }
        Py_DECREF(raw);
        b->n++;
        Py_RETURN_TRUE;
    }
    Py_XDECREF(raw);
    if (b->rows == Py_None) Py_RETURN_FALSE;
    return rows_add((EventRows *)b->rows, args, nargs);
}

static PyObject *out_take(Out *o) {
    PyObject *v = PyBytes_FromStringAndSize(o->buf, o->len);
    if (v != NULL) o->len = 0;
    return v;
}

static PyObject *bytes_take(EventBytes *b, PyObject *unused) {
    (void)unused;
    if (b->rows == NULL) {
        PyErr_SetString(PyExc_ValueError, "EventBytes not initialised");
        return NULL;
    }
    PyObject *rows = Py_None, *n_rows = NULL;
    Py_ssize_t written = b->rows == Py_None ? 0 : ((EventRows *)b->rows)->rows;
    if (written) {
        if ((rows = rows_take((EventRows *)b->rows, NULL)) == NULL) return NULL;
    } else {
        Py_INCREF(rows);
    }
    n_rows = PyLong_FromSsize_t(written);
    PyObject *data = out_take(&b->data), *lengths = out_take(&b->lengths),
             *positions = out_take(&b->positions);
    if (n_rows == NULL || data == NULL || lengths == NULL || positions == NULL) {
        Py_XDECREF(data);
        Py_XDECREF(lengths);
        Py_XDECREF(positions);
        Py_DECREF(rows);
        Py_XDECREF(n_rows);
        return NULL;
    }
    /* "N" hands each reference over (released by Py_BuildValue on failure too) */
    PyObject *result = Py_BuildValue("(NNNnNN)", data, lengths, positions, b->n, rows, n_rows);
    if (result != NULL) b->n = 0;
    return result;
}

static Py_ssize_t bytes_len(EventBytes *b) {
    return b->n + (b->rows != NULL && b->rows != Py_None ? ((EventRows *)b->rows)->rows : 0);
}

static PyObject *bytes_add_at(EventBytes *b, PyObject *const *args, Py_ssize_t nargs);

static PyMethodDef bytes_methods[] = {
    {"add", (PyCFunction)(void (*)(void))bytes_add, METH_FASTCALL,
     "add(event, position) -> bool: kept as its bytes, or written by rows (False: not)"},
    {"add_at", (PyCFunction)(void (*)(void))bytes_add_at, METH_FASTCALL,
     "add_at(clock, event) -> int | None: the event at its position on clock, added as "
     "add adds it (None), or its position when not (the caller keeps it)"},
    {"take", (PyCFunction)bytes_take, METH_NOARGS,
     "take() -> (data, lengths, positions, n, rows' take() or None, rows): then none"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods bytes_as_sequence = {.sq_length = (lenfunc)bytes_len};

static PyTypeObject EventBytesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pitwatch.events._native.EventBytes",
    .tp_doc = "EventBytes(rows): a batch's events as their Avro bytes, the others' rows",
    .tp_basicsize = sizeof(EventBytes),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = bytes_new,
    .tp_init = (initproc)bytes_init,
    .tp_dealloc = (destructor)bytes_dealloc,
    .tp_methods = bytes_methods,
    .tp_as_sequence = &bytes_as_sequence,
};

/* `Recent(capacity)`: the last `capacity` event ids of a table and their positions,
   for its record clock (pitwatch/store/order.py), kept as 96 bits of a hash of their
   UTF-8 bytes (MurmurHash3_x64_128, seed 0) rather than as the ids themselves: 28
   bytes an id (the hash, the position, the chain; 40 with all 128 bits and twice the
   buckets) where a dict of str kept about 200. For 4,096 ids a table, that is 4.6 MB
   over 40 tables, not 26 MB, and 0.7 GB over a jurisdiction's 6,000, not 5 GB. A new
   id is taken for one of the window's only if all 96 bits agree: at most 4,096 / 2**96
   an event, about 4e-15 in a year of a jurisdiction's 7.5e10 events. `add` puts an id
   in the place of the oldest once full; `get` gives the position of the newest with
   the id, or None. The same ids in the same order give the same answers: no randomness
   (Python's str hash is salted per process). */

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static inline uint64_t fmix64(uint64_t k) {
    k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL; k ^= k >> 33;
    return k;
}

static void murmur3_128(const uint8_t *data, size_t len, uint64_t out[2]) {
    const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
    uint64_t h1 = 0, h2 = 0, k1, k2;
    size_t nblocks = len / 16;
    for (size_t i = 0; i < nblocks; i++) {
        memcpy(&k1, data + i * 16, 8);
        memcpy(&k2, data + i * 16 + 8, 8);
        k1 *= c1; k1 = rotl64(k1, 31); k1 *= c2; h1 ^= k1;
        h1 = rotl64(h1, 27); h1 += h2; h1 = h1 * 5 + 0x52dce729;
        k2 *= c2; k2 = rotl64(k2, 33); k2 *= c1; h2 ^= k2;
        h2 = rotl64(h2, 31); h2 += h1; h2 = h2 * 5 + 0x38495ab5;
    }
    const uint8_t *tail = data + nblocks * 16;
    k1 = k2 = 0;
    switch (len & 15) {
    case 15: k2 ^= (uint64_t)tail[14] << 48; /* fall through */
    case 14: k2 ^= (uint64_t)tail[13] << 40; /* fall through */
    case 13: k2 ^= (uint64_t)tail[12] << 32; /* fall through */
    case 12: k2 ^= (uint64_t)tail[11] << 24; /* fall through */
    case 11: k2 ^= (uint64_t)tail[10] << 16; /* fall through */
    case 10: k2 ^= (uint64_t)tail[9] << 8; /* fall through */
    case 9: k2 ^= (uint64_t)tail[8];
        k2 *= c2; k2 = rotl64(k2, 33); k2 *= c1; h2 ^= k2; /* fall through */
    case 8: k1 ^= (uint64_t)tail[7] << 56; /* fall through */
    case 7: k1 ^= (uint64_t)tail[6] << 48; /* fall through */
    case 6: k1 ^= (uint64_t)tail[5] << 40; /* fall through */
    case 5: k1 ^= (uint64_t)tail[4] << 32; /* fall through */
    case 4: k1 ^= (uint64_t)tail[3] << 24; /* fall through */
    case 3: k1 ^= (uint64_t)tail[2] << 16; /* fall through */
    case 2: k1 ^= (uint64_t)tail[1] << 8; /* fall through */
    case 1: k1 ^= (uint64_t)tail[0];
        k1 *= c1; k1 = rotl64(k1, 31); k1 *= c2; h1 ^= k1;
    }
    h1 ^= (uint64_t)len; h2 ^= (uint64_t)len;
    h1 += h2; h2 += h1;
    h1 = fmix64(h1); h2 = fmix64(h2);
    h1 += h2; h2 += h1;
    out[0] = h1;
    out[1] = h2;
}

typedef struct {
    uint64_t h0, pos; /* the id's hash: its first 64 bits here, 32 more in h1 */
    uint32_t h1;
    int32_t next; /* the next slot in its bucket's chain, or -1 */
} Slot;

typedef struct {
    PyObject_HEAD
    Py_ssize_t capacity, count; /* count: ids ever added (the ring's next slot is count % capacity) */
    Py_ssize_t allocated;       /* slots allocated: doubled as ids come, up to capacity */
    Slot *slots;
    int32_t *heads;             /* a bucket's first slot, or -1: the least power of two
                                   buckets not fewer than the slots allocated */
    uint64_t mask;              /* buckets - 1 */
} Recent;

static int recent_hash(Recent *r, PyObject *id, uint64_t h[2]) {
    Py_ssize_t n;
    const char *u;
    if (r->heads == NULL) {
        PyErr_SetString(PyExc_ValueError, "Recent not initialised");
        return -1;
    }
    if (!PyUnicode_Check(id)) {
        PyErr_Format(PyExc_TypeError, "an event id is a str, not %.100s",
                     Py_TYPE(id)->tp_name);
        return -1;
    }
    if ((u = PyUnicode_AsUTF8AndSize(id, &n)) == NULL) return -1;
    murmur3_128((const uint8_t *)u, (size_t)n, h);
    return 0;
}

static void recent_link(Recent *r, int32_t i) {
    uint64_t b = r->slots[i].h0 & r->mask;
    r->slots[i].next = r->heads[b];
    r->heads[b] = i;
}

/* room for `want` slots (and buckets), re-linking the slots in use */
static int recent_grow(Recent *r, Py_ssize_t want) {
    Py_ssize_t buckets = 1;
    while (buckets < want) buckets *= 2;
    Slot *slots = PyMem_Realloc(r->slots, (size_t)want * sizeof(Slot));
    if (slots == NULL) return -1;
    r->slots = slots;
    int32_t *heads = PyMem_Realloc(r->heads, (size_t)buckets * sizeof(int32_t));
    if (heads == NULL) return -1;
    r->heads = heads;
    r->allocated = want;
    r->mask = (uint64_t)buckets - 1;
    for (Py_ssize_t b = 0; b < buckets; b++) r->heads[b] = -1;
    for (Py_ssize_t i = 0; i < r->count; i++) recent_link(r, (int32_t)i);
    return 0;
}

static int recent_init(Recent *r, PyObject *args, PyObject *kwds) {
    Py_ssize_t capacity;
    static char *kw[] = {"capacity", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n", kw, &capacity)) return -1;
    if (capacity < 1 || capacity > (1 << 24)) {
        PyErr_SetString(PyExc_ValueError, "capacity from 1 to 2**24");
        return -1;
    }
    PyMem_Free(r->slots);
    PyMem_Free(r->heads);
    r->slots = NULL;
    r->heads = NULL;
    r->capacity = capacity;
    r->count = 0;
    return recent_grow(r, 1) < 0 ? (PyErr_NoMemory(), -1) : 0;
}

static void recent_dealloc(Recent *r) {
    PyMem_Free(r->slots);
    PyMem_Free(r->heads);
    Py_TYPE(r)->tp_free((PyObject *)r);
}

/* the slot holding the id of hash `h`, or -1 */
static int32_t recent_find(Recent *r, const uint64_t h[2]) {
    for (int32_t i = r->heads[h[0] & r->mask]; i >= 0; i = r->slots[i].next) {
        if (r->slots[i].h0 == h[0] && r->slots[i].h1 == (uint32_t)h[1]) return i;
    }
    return -1;
}

/* the id of hash `h` added at `pos`, the oldest leaving once `capacity` are held */
static int recent_put(Recent *r, const uint64_t h[2], uint64_t pos) {
    if (r->count < r->capacity && r->count == r->allocated) {
        Py_ssize_t want = r->allocated * 2 < r->capacity ? r->allocated * 2 : r->capacity;
        if (recent_grow(r, want) < 0) {
            PyErr_NoMemory();
            return -1;
        }
    }
    int32_t i = (int32_t)(r->count % r->capacity);
    if (r->count >= r->capacity) { /* the oldest id leaves its bucket's chain */
        int32_t *at = &r->heads[r->slots[i].h0 & r->mask];
        while (*at != i) at = &r->slots[*at].next;
        *at = r->slots[i].next;
    }
    r->slots[i].h0 = h[0];
    r->slots[i].h1 = (uint32_t)h[1];
    r->slots[i].pos = pos;
    recent_link(r, i);
    r->count++;
    return 0;
}

static PyObject *recent_get(Recent *r, PyObject *id) {
    uint64_t h[2];
    if (recent_hash(r, id, h) < 0) return NULL;
    int32_t i = recent_find(r, h);
    if (i < 0) Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(r->slots[i].pos);
}

static PyObject *recent_add(Recent *r, PyObject *args) {
    PyObject *id, *at;
    uint64_t h[2];
    if (!PyArg_ParseTuple(args, "OO!", &id, &PyLong_Type, &at) || recent_hash(r, id, h) < 0)
        return NULL;
    unsigned long long pos = PyLong_AsUnsignedLongLong(at); /* a negative one raises */
    if (pos == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    if (recent_put(r, h, pos) < 0) return NULL;
    Py_RETURN_NONE;
}

static Py_ssize_t recent_len(Recent *r) {
    return r->count < r->capacity ? r->count : r->capacity;
}

static PyMethodDef recent_methods[] = {
    {"get", (PyCFunction)recent_get, METH_O, "get(event_id) -> int | None"},
    {"add", (PyCFunction)recent_add, METH_VARARGS, "add(event_id, pos) -> None"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods recent_as_sequence = {.sq_length = (lenfunc)recent_len};

static PyTypeObject RecentType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pitwatch.events._native.Recent",
    .tp_doc = "Recent(capacity): the last `capacity` event ids of a table, and their positions",
    .tp_basicsize = sizeof(Recent),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)recent_init,
    .tp_dealloc = (destructor)recent_dealloc,
    .tp_methods = recent_methods,
    .tp_as_sequence = &recent_as_sequence,
};

/* ---- Clock: a table's record clock (pitwatch/store/order.py, `TableClock`) ----
   `Clock(window, stride)`: `position(event)` is the event's position in its table's
   order of record: the position it had when its id is among the last `window` seen,
   else `total * stride + extra` after the clock moves: a device's seq past its `last`
   one adds the step to `total` (and `extra` is 0), any other event adds 1 to `extra`
   (up to stride - 1). `total`, `extra` and `last` (a dict: device id -> seq) are the
   clock's attributes, which a writer resuming from the store sets. `behind` counts the
   events that moved no device forward, a redelivered one among them: a clock whose
   `behind` is 0 was given no event twice. A position past 2**64 - 1 (or below 0) raises
   OverflowError, as the store would refuse it. */

typedef struct {
    PyObject_HEAD
    Recent *recent;
    PyObject *last;
    long long total, extra, stride, behind;
} Clock;

static PyObject *clock_position(Clock *c, PyObject *ev) {
    PyObject *id = NULL, *device = NULL, *seq = NULL, *result = NULL;
    uint64_t h[2];
    if (c->recent == NULL) {
        PyErr_SetString(PyExc_ValueError, "Clock not initialised");
        return NULL;
    }
    if (c->last == NULL || !PyDict_Check(c->last)) {
        PyErr_SetString(PyExc_TypeError, "Clock.last is a dict of device id -> seq");
        return NULL;
    }
    if ((id = slot_attr(ev, envelope_names[0])) == NULL
        || recent_hash(c->recent, id, h) < 0)
        goto done;
    int32_t known = recent_find(c->recent, h);
    if (known >= 0) {
        if ((result = PyLong_FromUnsignedLongLong(c->recent->slots[known].pos)) != NULL
            && c->behind < LLONG_MAX)
            c->behind++;
        goto done;
    }
    if ((device = slot_attr(ev, envelope_names[2])) == NULL
        || (seq = slot_attr(ev, envelope_names[3])) == NULL)
        goto done;
    long long s = PyLong_AsLongLong(seq), last = 0;
    if (s == -1 && PyErr_Occurred()) goto done;
    PyObject *was = PyDict_GetItemWithError(c->last, device);
    if (was == NULL && PyErr_Occurred()) goto done;
    if (was != NULL && (last = PyLong_AsLongLong(was)) == -1 && PyErr_Occurred()) goto done;
    long long total = c->total, extra = c->extra, step;
    if (s > last) {
        if (__builtin_sub_overflow(s, last, &step) || __builtin_add_overflow(total, step, &total))
            goto overflow;
        extra = 0;
    } else if (extra < c->stride - 1) {  /* stride >= 1: never overflows */
        extra++;
    }
    __int128 pos = (__int128)total * c->stride + extra;
    if (pos < 0 || pos > (__int128)UINT64_MAX) goto overflow;
    if (s > last && PyDict_SetItem(c->last, device, seq) < 0) goto done;
    c->total = total;
    c->extra = extra;
    if (s <= last && c->behind < LLONG_MAX) c->behind++;
    if (recent_put(c->recent, h, (uint64_t)pos) == 0)
        result = PyLong_FromUnsignedLongLong((uint64_t)pos);
    goto done;
overflow:
    PyErr_SetString(PyExc_OverflowError, "the record clock passed 2**64 - 1");
done:
    Py_XDECREF(id);
    Py_XDECREF(device);
    Py_XDECREF(seq);
    return result;
}

static int clock_init(Clock *c, PyObject *args, PyObject *kwds) {
    Py_ssize_t window;
    long long stride;
    static char *kw[] = {"window", "stride", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "nL", kw, &window, &stride)) return -1;
    if (stride < 1) {
        PyErr_SetString(PyExc_ValueError, "stride from 1");
        return -1;
    }
    PyObject *recent = PyObject_CallFunction((PyObject *)&RecentType, "n", window);
    PyObject *last = PyDict_New();
    if (recent == NULL || last == NULL) {
        Py_XDECREF(recent);
        Py_XDECREF(last);
        return -1;
    }
    Py_XSETREF(c->recent, (Recent *)recent);
    Py_XSETREF(c->last, last);
    c->total = c->extra = c->behind = 0;
    c->stride = stride;
    return 0;
}

static void clock_dealloc(Clock *c) {
    Py_XDECREF(c->recent);
    Py_XDECREF(c->last);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyMethodDef clock_methods[] = {
    {"position", (PyCFunction)clock_position, METH_O, "position(event) -> int"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef clock_members[] = {
    {"total", T_LONGLONG, offsetof(Clock, total), 0, "the sum of the devices' last seqs"},
    {"extra", T_LONGLONG, offsetof(Clock, extra), 0,
     "events since the clock last moved that did not move it"},
    {"last", T_OBJECT_EX, offsetof(Clock, last), 0, "each device's last seq"},
    {"stride", T_LONGLONG, offsetof(Clock, stride), READONLY, "positions a tick"},
    {"behind", T_LONGLONG, offsetof(Clock, behind), READONLY,
     "events that moved no device forward (a redelivered one among them)"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ClockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pitwatch.events._native.Clock",
    .tp_doc = "Clock(window, stride): a table's record clock",
    .tp_basicsize = sizeof(Clock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)clock_init,
    .tp_dealloc = (destructor)clock_dealloc,
    .tp_methods = clock_methods,
    .tp_members = clock_members,
};

/* `EventBytes.add_at(clock, event)`: `clock.position(event)` and `add(event, position)`
   in one call, the audit's per-event hand-over (pitwatch/audit/run.py). None when the
   event was added; else its position, and the event is the caller's, as when `add`
   gives False. The clock has moved either way. */
static PyObject *bytes_add_at(EventBytes *b, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !Py_IS_TYPE(args[0], &ClockType)) {
        PyErr_SetString(PyExc_TypeError, "add_at(clock, event): a Clock and an event");
        return NULL;
    }
    PyObject *pos = clock_position((Clock *)args[0], args[1]);
    if (pos == NULL) return NULL;
    PyObject *pair[2] = {args[1], pos};
    PyObject *added = bytes_add(b, pair, 2);
    if (added == NULL) {
        Py_DECREF(pos);
        return NULL;
    }
    int took = added == Py_True;
    Py_DECREF(added);
    if (!took) return pos;
    Py_DECREF(pos);
    Py_RETURN_NONE;
}

/* `EventRows.add_at(clock, event)`: `clock.position(event)` and `add(event, position)`
   in one call, as `EventBytes.add_at`. */
static PyObject *rows_add_at(EventRows *r, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !Py_IS_TYPE(args[0], &ClockType)) {
        PyErr_SetString(PyExc_TypeError, "add_at(clock, event): a Clock and an event");
        return NULL;
    }
    PyObject *pos = clock_position((Clock *)args[0], args[1]);
    if (pos == NULL) return NULL;
    PyObject *pair[2] = {args[1], pos};
    PyObject *added = rows_add(r, pair, 2);
    if (added == NULL) {
        Py_DECREF(pos);
        return NULL;
    }
    int took = added == Py_True;
    Py_DECREF(added);
    if (!took) return pos;
    Py_DECREF(pos);
    Py_RETURN_NONE;
}

/* ---- RangeCheck: the contract's ranges, checked in C (pitwatch/events/limits.py) ----
   `RangeCheck(event_type, envelope, payload, payloads)(event)` is True when the event is
   certainly inside the ranges: it is of `event_type` and each field of `envelope` is in
   range, and its `payload` attribute is of a type in `payloads` whose fields are each in
   range. A field is (attribute, kind, lo, hi, optional): an "int" from lo to hi, a "str"
   of lo to hi characters, "bytes" of lo to hi bytes, or None where optional. False gives
   no verdict: anything else (a payload type not in `payloads`, a value out of range or
   not of its kind) is left to `limits.check`, which names the field.

   The fields are read at their slots' offsets (`member_offset`), found once, so a check
   is a few loads. */

enum { RANGE_INT, RANGE_STR, RANGE_BYTES };

typedef struct {
    Py_ssize_t offset;
    int kind, optional;
    long long lo, hi;
} Field;

typedef struct {
    PyTypeObject *type; /* a reference kept in RangeCheck.keep */
    Py_ssize_t n;
    Field *fields;
} Shape;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *keep; /* the types of the shapes */
    Shape envelope;
    Py_ssize_t payload_offset;
    Py_ssize_t n_payloads;
    Shape *payloads;
} RangeCheck;

static int field_in(PyObject *obj, const Field *f) {
    PyObject *v = *(PyObject **)((char *)obj + f->offset);
    Py_ssize_t n;
    int overflow;
    if (v == NULL) return 0; /* a slot never set: Python raises AttributeError */
    if (v == Py_None) return f->optional;
    switch (f->kind) {
    case RANGE_INT: {
        if (!PyLong_Check(v)) return 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        return !overflow && f->lo <= x && x <= f->hi;
    }
    case RANGE_STR:
        if (!PyUnicode_Check(v)) return 0;
        n = PyUnicode_GET_LENGTH(v);
        break;
    default:
        if (!PyBytes_Check(v)) return 0;
        n = PyBytes_GET_SIZE(v);
    }
    return f->lo <= n && n <= f->hi;
}

static int shape_in(PyObject *obj, const Shape *s) {
    for (Py_ssize_t i = 0; i < s->n; i++) {
        if (!field_in(obj, &s->fields[i])) return 0;
    }
    return 1;
}

static PyObject *range_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames) {
    RangeCheck *rc = (RangeCheck *)self;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "RangeCheck takes one event");
        return NULL;
    }
    PyObject *ev = args[0];
    if (rc->envelope.type == NULL || !Py_IS_TYPE(ev, rc->envelope.type)
        || !shape_in(ev, &rc->envelope))
        Py_RETURN_FALSE;
    PyObject *payload = *(PyObject **)((char *)ev + rc->payload_offset);
    if (payload == NULL) Py_RETURN_FALSE;
    for (Py_ssize_t i = 0; i < rc->n_payloads; i++) {
        if (Py_IS_TYPE(payload, rc->payloads[i].type))
            return PyBool_FromLong(shape_in(payload, &rc->payloads[i]));
    }
    Py_RETURN_FALSE;
}

/* the offset of the slot `name` of `type`, or -1 with TypeError */
static Py_ssize_t slot_offset(PyTypeObject *type, PyObject *name) {
    Py_ssize_t offset = member_offset(type, name);
    if (offset < 0)
        PyErr_Format(PyExc_TypeError, "%.100s.%U is not a slot", type->tp_name, name);
    return offset;
}

static int shape_init(Shape *s, PyObject *type, PyObject *spec) {
    static const char *KINDS[] = {"int", "str", "bytes"};
    if (!PyType_Check(type) || !PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "a shape is a type and a tuple of fields");
        return -1;
    }
    s->type = (PyTypeObject *)type;
    s->n = PyTuple_GET_SIZE(spec);
    if ((s->fields = PyMem_Calloc((size_t)s->n + 1, sizeof(Field))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < s->n; i++) {
        PyObject *name, *kind;
        Field *f = &s->fields[i];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(spec, i), "UULLp;a field is (attribute, "
                              "kind, lo, hi, optional)", &name, &kind, &f->lo, &f->hi,
                              &f->optional))
            return -1;
        f->kind = -1;
        for (int k = 0; k < 3; k++) {
            if (PyUnicode_CompareWithASCIIString(kind, KINDS[k]) == 0) f->kind = k;
        }
        if (f->kind < 0) {
            PyErr_Format(PyExc_ValueError, "kind %R: int, str or bytes", kind);
            return -1;
        }
        if ((f->offset = slot_offset(s->type, name)) < 0) return -1;
    }
    return 0;
}

static void range_clear(RangeCheck *rc) {
    PyMem_Free(rc->envelope.fields);
    for (Py_ssize_t i = 0; i < rc->n_payloads; i++) PyMem_Free(rc->payloads[i].fields);
    PyMem_Free(rc->payloads);
    Py_CLEAR(rc->keep);
    memset(&rc->envelope, 0, sizeof rc->envelope);
    rc->payloads = NULL;
    rc->n_payloads = 0;
}

static int range_init(RangeCheck *rc, PyObject *args, PyObject *kwds) {
    PyObject *event_type, *envelope, *payload, *payloads, *key, *spec;
    static char *kw[] = {"event_type", "envelope", "payload", "payloads", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!UO!", kw, &event_type, &PyTuple_Type,
                                     &envelope, &payload, &PyDict_Type, &payloads))
        return -1;
    range_clear(rc);
    rc->vectorcall = range_vectorcall;
    if ((rc->keep = PyList_New(0)) == NULL || PyList_Append(rc->keep, event_type) < 0
        || shape_init(&rc->envelope, event_type, envelope) < 0
        || (rc->payload_offset = slot_offset(rc->envelope.type, payload)) < 0)
        goto fail;
    Py_ssize_t n = PyDict_Size(payloads), at = 0;
    if ((rc->payloads = PyMem_Calloc((size_t)n + 1, sizeof(Shape))) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    while (PyDict_Next(payloads, &at, &key, &spec)) {
        if (PyList_Append(rc->keep, key) < 0) goto fail;
        rc->n_payloads++;
        if (shape_init(&rc->payloads[rc->n_payloads - 1], key, spec) < 0) goto fail;
    }
    return 0;
fail:
    range_clear(rc);
    return -1;
}

static void range_dealloc(RangeCheck *rc) {
    range_clear(rc);
    Py_TYPE(rc)->tp_free((PyObject *)rc);
}

static PyTypeObject RangeCheckType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pitwatch.events._native.RangeCheck",
    .tp_doc = "RangeCheck(event_type, envelope, payload, payloads)(event) -> bool: True "
              "when the event is certainly inside the contract's ranges",
    .tp_basicsize = sizeof(RangeCheck),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(RangeCheck, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)range_init,
    .tp_dealloc = (destructor)range_dealloc,
};

static PyMethodDef methods[] = {
    {"frame", frame, METH_VARARGS,
     "frame(program, data, count) -> (ends, tables) | None"},
    {"build", build_block, METH_VARARGS,
     "build(program, consts, data, count) -> list | None"},
    {"pick", pick, METH_VARARGS,
     "pick(program, consts, data, count, ours, decide) -> (indices, records) | None"},
    {"body", body, METH_O, "body(event) -> bytes | None: its JSON Lines form"},
    {"row_body", row_body, METH_O,
     "row_body(event) -> bytes | None: its `events` row's body"},
    {"event_columns", event_columns, METH_VARARGS,
     "event_columns(events, positions, fingerprint, body_of) -> tuple | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "Avro blocks framed and built in C, by a program compiled from the writer schema.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    for (int i = 0; i < N_COLUMNS; i++) {
        if ((column_attr[i] = PyUnicode_InternFromString(COLUMNS[i].name)) == NULL)
            return NULL;
    }
    for (int i = 0; ENVELOPE[i] != NULL; i++) {
        if ((envelope_names[i] = PyUnicode_InternFromString(ENVELOPE[i])) == NULL)
            return NULL;
    }
    for (int i = 0; CHECKPOINT_HEX[i] != NULL; i++) {
        if ((hex_names[i] = PyUnicode_InternFromString(CHECKPOINT_HEX[i])) == NULL)
            return NULL;
    }
    if ((payload_name = PyUnicode_InternFromString("payload")) == NULL
        || (slots_name = PyUnicode_InternFromString("__slots__")) == NULL
        || (checkpoint_name = PyUnicode_InternFromString("Checkpoint")) == NULL
        || (writer_name = PyUnicode_InternFromString("writer")) == NULL
        || (raw_name = PyUnicode_InternFromString("raw")) == NULL
        || (zero = PyLong_FromLong(0)) == NULL || (empty = PyUnicode_New(0, 0)) == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module), *spec = PyTuple_New(N_COLUMNS);
    if (m == NULL || spec == NULL) goto fail;
    for (int i = 0; i < N_COLUMNS; i++) {
        PyObject *one = Py_BuildValue("(ss)", COLUMNS[i].name, COLUMNS[i].type);
        if (one == NULL) goto fail;
        PyTuple_SET_ITEM(spec, i, one);
    }
    if (PyModule_AddObject(m, "EVENT_COLUMNS", spec) < 0) goto fail;
    spec = NULL;
    if (PyType_Ready(&RecentType) < 0 || PyModule_AddObjectRef(m, "Recent",
                                                              (PyObject *)&RecentType) < 0
        || PyType_Ready(&ClockType) < 0
        || PyModule_AddObjectRef(m, "Clock", (PyObject *)&ClockType) < 0
        || PyType_Ready(&EventRowsType) < 0
        || PyModule_AddObjectRef(m, "EventRows", (PyObject *)&EventRowsType) < 0
        || PyType_Ready(&EventBytesType) < 0
        || PyModule_AddObjectRef(m, "EventBytes", (PyObject *)&EventBytesType) < 0
        || PyType_Ready(&RangeCheckType) < 0
        || PyModule_AddObjectRef(m, "RangeCheck", (PyObject *)&RangeCheckType) < 0)
        goto fail;
    return m;
fail:
    Py_XDECREF(spec);
    Py_XDECREF(m);
    return NULL;
}
