/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "json-pb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "parse-util.h"
#include "pb-scratch.h"

#define ENTRY_KEY_FIELD 1
#define ENTRY_VALUE_FIELD 2

struct ctx {
        struct pb_scratch sc;
        size_t unknown;
};

static int fill(struct ctx *c, const json_t *obj, const ProtobufCMessageDescriptor *d, void *msg);

static size_t field_size(const ProtobufCFieldDescriptor *f) {
        switch (f->type) {
        case PROTOBUF_C_TYPE_INT64:
        case PROTOBUF_C_TYPE_SINT64:
        case PROTOBUF_C_TYPE_SFIXED64:
        case PROTOBUF_C_TYPE_UINT64:
        case PROTOBUF_C_TYPE_FIXED64:
                return sizeof(uint64_t);
        case PROTOBUF_C_TYPE_DOUBLE:
                return sizeof(double);
        case PROTOBUF_C_TYPE_FLOAT:
                return sizeof(float);
        case PROTOBUF_C_TYPE_BOOL:
                return sizeof(protobuf_c_boolean);
        case PROTOBUF_C_TYPE_STRING:
        case PROTOBUF_C_TYPE_MESSAGE:
                return sizeof(void *);
        default:
                return sizeof(uint32_t); /* 32-bit integers and enums */
        }
}

/* An integer from a JSON number or a "0x..." address string. */
static bool json_u64(const json_t *v, uint64_t *ret) {
        const char *s;
        char *end;

        if (json_is_integer(v)) {
                *ret = (uint64_t) json_integer_value(v);
                return true;
        }
        s = json_string_value(v);
        if (!s || strncmp(s, "0x", 2) != 0 || !s[2])
                return false;
        errno = 0;
        *ret = strtoull(s + 2, &end, 16);
        return errno == 0 && *end == '\0';
}

static int set_value(struct ctx *c, const ProtobufCFieldDescriptor *f, const json_t *v, void *dst) {
        uint64_t u;

        switch (f->type) {
        case PROTOBUF_C_TYPE_STRING:
                if (!json_is_string(v))
                        return -EINVAL;
                *(const char **) dst = json_string_value(v); /* the JSON outlives the packing */
                return 0;
        case PROTOBUF_C_TYPE_BOOL:
                if (json_is_boolean(v))
                        *(protobuf_c_boolean *) dst = json_is_true(v);
                else if (json_is_integer(v))
                        *(protobuf_c_boolean *) dst = json_integer_value(v) != 0;
                else
                        return -EINVAL;
                return 0;
        case PROTOBUF_C_TYPE_DOUBLE:
        case PROTOBUF_C_TYPE_FLOAT:
                if (!json_is_number(v))
                        return -EINVAL;
                if (f->type == PROTOBUF_C_TYPE_DOUBLE)
                        *(double *) dst = json_number_value(v);
                else
                        *(float *) dst = (float) json_number_value(v);
                return 0;
        case PROTOBUF_C_TYPE_MESSAGE: {
                const ProtobufCMessageDescriptor *md = f->descriptor;
                void *sub;

                /* A wrapper (one field "value", as google.protobuf.UInt32Value)
                 * takes the bare value, as the proto3 JSON mapping writes it. */
                bool wrapper = md->n_fields == 1 && streq(md->fields[0].name, "value");

                if (!json_is_object(v) && !wrapper)
                        return -EINVAL;
                sub = pb_scratch_alloc(&c->sc, md->sizeof_message);
                protobuf_c_message_init(md, sub);
                *(void **) dst = sub;
                if (!json_is_object(v))
                        return set_value(c, &md->fields[0], v, (uint8_t *) sub + md->fields[0].offset);
                return fill(c, v, md, sub);
        }
        case PROTOBUF_C_TYPE_ENUM:
        case PROTOBUF_C_TYPE_BYTES:
                return -EINVAL; /* not used by our API messages */
        default:
                if (!json_u64(v, &u))
                        return -EINVAL;
                if (field_size(f) == sizeof(uint64_t))
                        *(uint64_t *) dst = u;
                else
                        *(uint32_t *) dst = (uint32_t) u;
                return 0;
        }
}

/* {"load": 3, "store": 1} or {"load": {...}} on a repeated message field: one entry per key. */
static int set_entries(struct ctx *c, const ProtobufCFieldDescriptor *f, const json_t *obj, void *msg) {
        const ProtobufCMessageDescriptor *md = f->descriptor;
        const ProtobufCFieldDescriptor *key_f = protobuf_c_message_descriptor_get_field(md, ENTRY_KEY_FIELD);
        const ProtobufCFieldDescriptor *val_f = protobuf_c_message_descriptor_get_field(md, ENTRY_VALUE_FIELD);
        size_t n = json_object_size(obj), i = 0;
        void **arr = pb_scratch_alloc(&c->sc, (n + 1) * sizeof(void *));
        const char *key;
        json_t *v;
        int r;

        if (!key_f || key_f->type != PROTOBUF_C_TYPE_STRING)
                return -EINVAL;
        json_object_foreach((json_t *) obj, key, v) {
                void *e = pb_scratch_alloc(&c->sc, md->sizeof_message);

                protobuf_c_message_init(md, e);
                *(const char **) ((uint8_t *) e + key_f->offset) = key;
                if (json_is_object(v))
                        r = fill(c, v, md, e);
                else if (val_f)
                        r = set_value(c, val_f, v, (uint8_t *) e + val_f->offset);
                else
                        r = -EINVAL;
                if (r < 0)
                        return r;
                arr[i++] = e;
        }
        *(size_t *) ((uint8_t *) msg + f->quantifier_offset) = i;
        *(void ***) ((uint8_t *) msg + f->offset) = arr;
        return 0;
}

static int set_array(struct ctx *c, const ProtobufCFieldDescriptor *f, const json_t *arr, void *msg) {
        size_t n = json_array_size(arr), size = field_size(f);
        uint8_t *dst = pb_scratch_alloc(&c->sc, (n + 1) * size);
        int r;

        for (size_t i = 0; i < n; i++) {
                r = set_value(c, f, json_array_get(arr, i), dst + i * size);
                if (r < 0)
                        return r;
        }
        *(size_t *) ((uint8_t *) msg + f->quantifier_offset) = n;
        *(void **) ((uint8_t *) msg + f->offset) = dst;
        return 0;
}

static int fill(struct ctx *c, const json_t *obj, const ProtobufCMessageDescriptor *d, void *msg) {
        const char *key;
        json_t *v;

        json_object_foreach((json_t *) obj, key, v) {
                const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, key);
                int r;

                if (json_is_null(v))
                        continue;
                if (!f) {
                        c->unknown++;
                        continue;
                }
                if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                        if (json_is_array(v))
                                r = set_array(c, f, v, msg);
                        else if (json_is_object(v) && f->type == PROTOBUF_C_TYPE_MESSAGE)
                                r = set_entries(c, f, v, msg);
                        else
                                r = -EINVAL;
                } else {
                        r = set_value(c, f, v, (uint8_t *) msg + f->offset);
                        /* proto2 optional fields carry a presence flag. */
                        if (r == 0 && f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
                            f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
                                *(protobuf_c_boolean *) ((uint8_t *) msg + f->quantifier_offset) = 1;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

int json_to_pb(const json_t *json, const ProtobufCMessageDescriptor *d, struct strbuf *out,
               size_t *ret_unknown) {
        struct ctx c = {};
        void *msg;
        size_t len;
        int r;

        if (!json_is_object(json))
                return -EINVAL;
        msg = pb_scratch_alloc(&c.sc, d->sizeof_message);
        protobuf_c_message_init(d, msg);
        r = fill(&c, json, d, msg);
        if (r == 0) {
                len = protobuf_c_message_get_packed_size(msg);
                strbuf_reserve(out, len);
                protobuf_c_message_pack(msg, (uint8_t *) out->buf + out->len);
                out->len += len;
                out->buf[out->len] = '\0';
                if (ret_unknown)
                        *ret_unknown = c.unknown;
        }
        pb_scratch_free(&c.sc);
        return r;
}
