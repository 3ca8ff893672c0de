/* Avro blocks of records read in C, for the file audit: where each record ends, and
   each record built straight into pitwatch's typed classes; and, for the store, an
   event's JSON Lines form (`body`; less what an `events` row's columns hold:
   `row_body`) and a batch of the `events` table as Arrow buffers
   (`event_columns`, `EventRows`: from the events, or straight from their Avro bytes
   with `EventRows.add_avro`), a table's record clock and its recent event ids (`Clock`,
   `Recent`): those in pitwatch/store/native.c, included here; and the contract's ranges
   (`RangeCheck`), at the end of this file.

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

/* The store's part (the `events` rows, the record clock, the id window) lives under
   pitwatch/store/, and is compiled here, as part of this one extension. */
#include "../store/native.c"

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
