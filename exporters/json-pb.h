/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/*
 * The protobuf form of a JSON answer, filled field by field through
 * protobuf-c's descriptors, so the two forms of an endpoint cannot drift
 * apart. Rules (the .proto is written to match, see proto/armprofd.proto):
 *  - a JSON key sets the field of the same name;
 *  - "0x..." strings set integer fields (addresses), numbers set numbers,
 *    true/false set bools, objects set messages, arrays set repeated fields;
 *  - an object of name -> value set on a repeated message field becomes one
 *    entry per key: field 1 of the entry takes the key, and the value fills
 *    the entry (an object) or its field 2 (a number);
 *  - null is skipped.
 */

#include <stddef.h>

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

#include "strbuf.h"

/*
 * Append the packed message to out. *ret_unknown counts JSON keys the
 * message has no field for (the tests require 0). Returns 0 or -EINVAL
 * when a value cannot be represented in its field.
 */
int json_to_pb(const json_t *json, const ProtobufCMessageDescriptor *d, struct strbuf *out,
               size_t *ret_unknown);
