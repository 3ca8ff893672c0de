/* The store's part of pitwatch's C extension (`pitwatch.events._native`): the `events`
   table's rows (`event_columns`, `EventRows`, `EventBytes`), a table's record clock
   (`Clock`) and its recent event ids (`Recent`); pitwatch/store/native.py wraps them.

   Not compiled on its own: pitwatch/events/_native.c includes it where its helpers are
   defined (the slot reads, the output buffers, the JSON Lines body writer, and the
   Avro walk that `EventRows.add_avro` writes rows from), so the extension stays one
   library, built by hatch_build.py and sanitized by tests/fuzz/sanitize.sh as before. */

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

/* The add method of EventBytes or of EventRows, `add(event, position)`, called as the
   interpreter calls a method. */
typedef PyObject *(*AddMethod)(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* `add_at(clock, event)` of EventBytes and EventRows: `clock.position(event)` and
   `add(event, position)` in one call, the audit's per-event hand-over
   (pitwatch/audit/run.py). None when the event was added; else its position, and the
   event is the caller's, as when `add` gives False. The clock has moved either way. */
static PyObject *add_at(PyObject *self, AddMethod add, PyObject *const *args,
                        Py_ssize_t nargs) {
    if (nargs != 2 || !Py_IS_TYPE(args[0], &ClockType)) {
        PyErr_SetString(PyExc_TypeError, "add_at(clock, event): a Clock and an event");
        return NULL;
    }
    PyObject *pos = clock_position((Clock *)args[0], args[1]);
    if (pos == NULL) return NULL;
    PyObject *pair[2] = {args[1], pos};
    PyObject *added = add(self, pair, 2);
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

static PyObject *bytes_add_at(EventBytes *b, PyObject *const *args, Py_ssize_t nargs) {
    return add_at((PyObject *)b, (AddMethod)(void (*)(void))bytes_add, args, nargs);
}

static PyObject *rows_add_at(EventRows *r, PyObject *const *args, Py_ssize_t nargs) {
    return add_at((PyObject *)r, (AddMethod)(void (*)(void))rows_add, args, nargs);
}
