#!/usr/bin/env python3
"""Writes schema_cases.json for tests/test_json_schema.cpp: JSON Schemas, each with candidate
documents labelled valid or not by the `jsonschema` package (Draft 2020-12 with format
checking; draft 4 / 7 where a case uses their keywords), the oracle the grammars that
json_schema_to_gbnf writes are held to.

Documents are written as the grammar writes them: compact, properties in the schema's order
(json.dumps(doc, separators=(",", ":"), ensure_ascii=False)); every valid object or array
also comes with ", " and ": " spaces. A grammar must reject every invalid document; it must
accept every valid one except those marked with a `skip` reason (a documented restriction:
it writes one spelling of each value, so some valid spellings are not among its documents).

Each case: {"name", "schema", "strict", "closed_objects" (the JsonSchemaOptions to compile
it with), "docs": [{"text", "valid", "skip"?}]}.

Run: python3 gen_schema_cases.py  (writes schema_cases.json beside it)
"""
import json
import os

import jsonschema

CASES = []


class Raw:
    """A document given as text (a spelling json.dumps would not produce)."""

    def __init__(self, text, skip=None):
        self.text = text
        self.skip = skip


class Skip:
    """A document that is valid but outside the grammar's spellings, and why."""

    def __init__(self, value, reason):
        self.value = value
        self.reason = reason


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def spaced(value):
    return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)


def oracle(schema, draft):
    """The validator; OpenAPI's `nullable` (which jsonschema ignores) read as adding null."""

    def openapi(s):
        if isinstance(s, dict):
            s = {k: openapi(v) for k, v in s.items()}
            if s.pop("nullable", False) and "type" in s:
                types = s["type"] if isinstance(s["type"], list) else [s["type"]]
                s["type"] = types + ["null"]
            return s
        if isinstance(s, list):
            return [openapi(v) for v in s]
        return s

    cls = {4: jsonschema.Draft4Validator, 7: jsonschema.Draft7Validator, 2020: jsonschema.Draft202012Validator}[draft]
    return cls(openapi(schema), format_checker=cls.FORMAT_CHECKER)


def case(name, schema, docs, draft=2020, strict=False, closed_objects=True):
    validator = oracle(schema, draft)
    out = []
    for d in docs:
        skip = None
        parsed = True
        if isinstance(d, Raw):
            text, skip = d.text, d.skip
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                parsed = False  # not JSON: no schema takes it
        else:
            if isinstance(d, Skip):
                d, skip = d.value, d.reason
            value, text = d, compact(d)
        valid = parsed and validator.is_valid(value)
        entry = {"text": text, "valid": valid}
        if skip:
            entry["skip"] = skip
        out.append(entry)
        if valid and not skip and isinstance(value, (dict, list)) and spaced(value) != text:
            out.append({"text": spaced(value), "valid": True})
    CASES.append({"name": name, "schema": schema, "strict": strict, "closed_objects": closed_objects, "docs": out})


ANY = [None, True, False, 0, -12, 3.5, -1.25e-3, "", "text", [], [1, "a", None], {}, {"a": {"b": [1, {}]}}]
CLOSED = "objects without additionalProperties are closed (closed_objects)"
SEARCH = "a pattern matches the whole string, not a part of it"
NARROW = "keywords of one type narrow a schema without a type to it (integers for numbers' keywords)"
SPACE = "the only space is one after ':' and ','"

# Types.
case("string", {"type": "string"},
     ["", "abc", "with \"quote\" and \\ backslash", "tab\tnew\nline\u0001", "ünïcødé ✓ 😀", "/", 1, None, ["a"]])
case("integer", {"type": "integer"},
     [0, 7, -7, 123456789, 9999999999999999, -9999999999999999, 1.5, "1", None, Raw("01"), Raw("-"),
      Raw("1.0", skip="integers are written without a fraction"), Raw("-0"), Skip(12345678901234567, "at most 16 digits")])
case("number", {"type": "number"},
     [0, -0.5, 3.25, 1e-7, 12.0, -1.5e+300, Raw("1E5"), Raw("2.5e-3"), Raw("1."), Raw(".5"), Raw("+1"), Raw("0x10"),
      Raw("01.5"), "1", True])
case("boolean", {"type": "boolean"}, [True, False, 0, "true", None])
case("null", {"type": "null"}, [None, 0, False, "null", {}])
case("string or null", {"type": ["string", "null"]}, ["x", None, 0, False, []])
case("integer or boolean", {"type": ["integer", "boolean"]}, [5, True, "5", 5.5, None])
case("empty schema", {}, ANY)
case("true schema", True, ANY)
case("nullable (OpenAPI)", {"type": "integer", "nullable": True}, [3, None, "3", 3.5])

# Objects.
case("object with a required property",
     {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]},
     [{"a": 1}, {"a": 1, "b": "x"}, {"b": "x"}, {}, {"a": "1"}, {"a": 1, "b": 2}, [], "a",
      Skip({"b": "x", "a": 1}, "properties are written in the schema's order"), Skip({"a": 1, "c": 0}, CLOSED)])
case("object, every property optional",
     {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}, "c": {"type": "null"}}},
     [{}, {"a": 1}, {"b": True}, {"c": None}, {"a": 1, "b": False}, {"a": 1, "c": None}, {"b": True, "c": None},
      {"a": 1, "b": True, "c": None}, {"a": None}, {"b": 1}, Raw('{,"a":1}'), Raw('{"a":1,}'), Raw('{"a":1,,"b":true}'),
      Raw('{"a":1 ,"b":true}', skip=SPACE), Raw('{ "a":1}', skip=SPACE),
      Raw('{"a":1,  "b":true}', skip=SPACE)])
case("object, required and optional interleaved",
     {"type": "object",
      "properties": {"p": {"type": "integer"}, "q": {"type": "integer"}, "r": {"type": "integer"},
                     "s": {"type": "integer"}},
      "required": ["q", "s"]},
     [{"q": 1, "s": 2}, {"p": 0, "q": 1, "s": 2}, {"q": 1, "r": 3, "s": 2}, {"p": 0, "q": 1, "r": 3, "s": 2},
      {"p": 0, "q": 1}, {"q": 1}, {"s": 2}, {"p": 0, "s": 2}, {}, {"p": 0, "q": 1, "r": 3}])
case("additionalProperties false",
     {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
     [{}, {"a": "x"}, {"a": "x", "b": 1}, {"b": 1}, {"a": 1}])
case("additionalProperties true",
     {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
     [{}, {"a": "x"}, {"a": "x", "b": 1}, {"b": [1, {"c": None}]}, {"a": "x", "b": 1, "c": "y"}, {"a": 1},
      {"a": "x", "b": 1, "a2": 2}, Skip({"b": 1, "a": "x"}, "properties are written in the schema's order")])
case("additionalProperties a schema",
     {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
      "additionalProperties": {"type": "string"}},
     [{"id": 1}, {"id": 1, "x": "a"}, {"id": 1, "x": "a", "y": "b"}, {"id": 1, "x": 2}, {"x": "a"}, {"id": "1"},
      {"id": 1, "x": "a", "id2": "b"}])
case("open objects (closed_objects false)",
     {"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"type": "integer"}}},
     [{}, {"a": 1}, {"a": 1, "ab": 2}, {"a": 1, "z": "any"}, {"z": {"deep": [1]}}, {"abc": True}, {"": 0},
      {"a": "str"}, {"ab": "str"}, {"a": 1, "ab": "str"}, {"z": 1, "a": "str"}, Skip({"a": 1, "z": 1, "a\u0000": 2}, "names of unlisted properties are written without escapes"),
      Raw('{"z":1,"\\u0061":"str"}'), Raw('{"\\u0061b":"str"}')],
     closed_objects=False)
case("object without properties", {"type": "object"},
     [{}, Skip({"a": 1}, CLOSED), [], "{}", None])
case("required property not among the properties",
     {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "b"],
      "additionalProperties": {"type": "boolean"}},
     [{"a": 1, "b": True}, {"a": 1}, {"a": 1, "b": 1}, {"b": True}, {"a": 1, "b": True, "c": False}])
case("nested objects",
     {"type": "object",
      "properties": {"user": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                              "required": ["name"]},
                     "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["user"]},
     [{"user": {"name": "ann"}}, {"user": {"name": "ann", "age": 3}, "tags": ["a", "b"]}, {"user": {}},
      {"user": {"age": 3}}, {"tags": []}, {"user": {"name": "ann"}, "tags": [1]}])
case("property names that need escaping",
     {"type": "object",
      "properties": {"quo\"te": {"type": "integer"}, "back\\slash": {"type": "integer"}, "new\nline": {"type": "integer"},
                     "a/b": {"type": "integer"}, "ünï": {"type": "integer"}, "~0": {"type": "integer"}},
      "required": ["quo\"te"]},
     [{"quo\"te": 1}, {"quo\"te": 1, "back\\slash": 2, "new\nline": 3, "a/b": 4, "ünï": 5, "~0": 6}, {"quo\"te": "1"},
      {"back\\slash": 2}, Raw('{"quo"te":1}')])
case("properties without a type (objects only)",
     {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
     [{"a": 1}, {"a": "x"}, {}, Skip("any string", NARROW)])

# Arrays.
case("array of integers", {"type": "array", "items": {"type": "integer"}},
     [[], [1], [1, 2, 3], [1, "2"], ["a"], {}, Raw("[1,]"), Raw("[,1]"), Raw("[1 ,2]", skip=SPACE)])
case("array, 2 to 4 items", {"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 4},
     [[], [True], [True, False], [True, False, True], [True] * 4, [True] * 5, [True, 1]])
case("array, maxItems 0", {"type": "array", "maxItems": 0}, [[], [1], [None]])
case("array, minItems 1", {"type": "array", "items": {"type": "string"}, "minItems": 1},
     [[], ["a"], ["a", "b", "c", "d", "e", "f"], [1]])
case("array, maxItems 1", {"type": "array", "items": {"type": "null"}, "maxItems": 1}, [[], [None], [None, None]])
case("array of any", {"type": "array"}, [[], [1, "a", None, {"x": [True]}], [[[]]], "[]"])
case("tuple, no more items",
     {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
     [[], [1], [1, "a"], [1, "a", True], ["a"], [1, 2]])
case("tuple, then items, at least 3",
     {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": {"type": "boolean"},
      "minItems": 3, "maxItems": 5},
     [[1, "a"], [1, "a", True], [1, "a", True, False, True], [1, "a", True, False, True, False], [1, "a", 1], [1],
      [], ["a", "a", True]])
case("tuple, draft 7 items array and additionalItems",
     {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": False},
     [[], ["a"], ["a", 1], ["a", 1, 2], [1]], draft=7)
case("tuple with a false element",
     {"type": "array", "prefixItems": [{"type": "integer"}, False], "items": {"type": "string"}},
     [[], [1], [1, "a"], [1, 2], ["x"]])

# Values.
case("enum of strings", {"enum": ["red", "green", "blue with \"quotes\""]},
     ["red", "green", "blue with \"quotes\"", "Red", "", "yellow", 1, None])
case("enum of mixed values", {"enum": [1, 2.5, None, True, "x", [1, "a"], {"k": [None, {}]}]},
     [1, 2.5, None, True, "x", [1, "a"], {"k": [None, {}]}, False, 3, "y", [1], {"k": []}, [1, "a", None],
      Raw("1.0", skip="an enum value is written as the schema writes it")])
case("const object", {"const": {"a": 1, "b": [True, None]}},
     [{"a": 1, "b": [True, None]}, {"a": 1}, {"a": 1, "b": [True]}, {"a": 2, "b": [True, None]}, None])
case("enum with type", {"type": "string", "enum": ["a", 1, "b", None]}, ["a", "b", 1, None, "c"])
case("enum with maxLength", {"enum": ["ab", "abcdef", 5], "maxLength": 3}, ["ab", 5, "abcdef", "abc"])
case("enum with bounds", {"enum": [1, 5, 10, "x", 7.5], "minimum": 2, "exclusiveMaximum": 10},
     [5, "x", 7.5, 1, 10, 2, "y"])
case("const string with specials", {"const": "tab\there \"q\" \\ ✓"}, ["tab\there \"q\" \\ ✓", "tab here"])

# Combinations.
case("anyOf", {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 10}]},
     ["", "ab", "abc", 10, 99, 9, -10, None, True])
case("oneOf of distinct types (strict)",
     {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
     ["a", 1, None, 1.5, True, []], strict=True)
case("oneOf of constants (strict)", {"oneOf": [{"const": "a"}, {"const": "b"}, {"enum": [1, 2]}]},
     ["a", "b", 1, 2, "c", 3], strict=True)
case("allOf merged",
     {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                {"properties": {"b": {"type": "string"}}, "required": ["b"]},
                {"properties": {"a": {"minimum": 0}}}]},
     [{"a": 1, "b": "x"}, {"a": 0, "b": ""}, {"a": -1, "b": "x"}, {"a": 1}, {"b": "x"}, {"a": "1", "b": "x"}])
case("allOf with additionalProperties",
     {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
                {"properties": {"b": {"type": "integer"}}}]},
     [{}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"a": "x"}])
case("allOf of a tuple and items",
     {"allOf": [{"type": "array", "prefixItems": [{"type": "integer"}]}, {"items": {"minimum": 0}}]},
     [[], [1], [1, 2], [-1], [1, -2], ["a"], Skip([1, 0.5], NARROW)])
case("bounds without a type", {"minimum": 3, "maximum": 10},
     [3, 10, 7, 2, 11, -3, Skip(5.5, NARROW), Skip("x", NARROW)])
case("anyOf beside properties",
     {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
      "anyOf": [{"required": ["a"]}, {"required": ["b"]}]},
     [{"a": 1}, {"b": 2}, {"a": 1, "b": 2}, {}, {"a": "x"}])

# References.
case("$ref into $defs",
     {"$defs": {"pos": {"type": "integer", "minimum": 1}},
      "type": "object", "properties": {"x": {"$ref": "#/$defs/pos"}, "y": {"$ref": "#/$defs/pos"}},
      "required": ["x", "y"]},
     [{"x": 1, "y": 2}, {"x": 0, "y": 2}, {"x": 1}, {"x": 1, "y": "2"}])
case("$ref into definitions",
     {"definitions": {"name": {"type": "string", "minLength": 1}}, "type": "array", "items": {"$ref": "#/definitions/name"}},
     [[], ["a"], [""], ["a", 1]])
case("recursive tree",
     {"$defs": {"node": {"type": "object",
                         "properties": {"value": {"type": "integer"},
                                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                         "required": ["value"], "additionalProperties": False}},
      "$ref": "#/$defs/node"},
     [{"value": 1}, {"value": 1, "children": []}, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]},
      {"value": 1, "children": [{}]}, {"value": 1, "children": [{"value": "x"}]}, {"children": []}])
case("recursion through #",
     {"type": "object", "properties": {"v": {"type": "string"}, "next": {"$ref": "#"}}, "required": ["v"]},
     [{"v": "a"}, {"v": "a", "next": {"v": "b"}}, {"v": "a", "next": {"v": "b", "next": {"v": "c"}}},
      {"v": "a", "next": {}}, {"v": "a", "next": None}])
case("$ref with pointer escapes",
     {"$defs": {"a/b": {"type": "integer"}, "c~d": {"type": "string"}, "e%f": {"type": "boolean"}},
      "type": "array", "prefixItems": [{"$ref": "#/$defs/a~1b"}, {"$ref": "#/$defs/c~0d"}, {"$ref": "#/$defs/e%25f"}],
      "items": False},
     [[1, "x", True], [1, "x"], ["x"], [1, 2], [1, "x", 0]])
case("$ref with a constraint beside it",
     {"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "maxLength": 2},
     ["", "ab", "abc", 1])

# Strings.
case("string lengths", {"type": "string", "minLength": 2, "maxLength": 3},
     ["", "a", "ab", "abc", "abcd", "éé", "😀😀😀", "😀😀😀😀", "\n\t", "a\"", Raw('"\\u0041b"'), Raw('"\\ud83d\\ude00"'),
      Raw('"\\ud83d\\ude00\\ud83d\\ude00"', skip="characters outside the BMP are written raw, not as surrogate pairs")])
case("string maxLength 0", {"type": "string", "maxLength": 0}, ["", "a"])
case("pattern of letters", {"type": "string", "pattern": "^[a-z]+$"},
     ["abc", "", "ABC", "ab1", "a b"])
case("pattern unanchored", {"type": "string", "pattern": "[0-9]{3}"},
     ["123", "12", Skip("1234", SEARCH), Skip("x123", SEARCH), "abc"])
case("pattern with characters JSON escapes", {"type": "string", "pattern": "^a\"b\\\\c\\t[\"\\\\]$"},
     ["a\"b\\c\t\"", "a\"b\\c\t\\", "a\"b\\c\t", "a\"b\\ct\"", "ab\\c\t\""])
case("pattern phone", {"type": "string", "pattern": "^\\(?\\d{3}\\)? ?\\d{3}-\\d{4}$"},
     ["(555) 123-4567", "555 123-4567", "555123-4567", "(555 123-4567", "555-123-4567", "55 123-4567"])
case("pattern with alternatives and dot", {"type": "string", "pattern": "^(foo|ba.)+x?$"},
     ["foo", "barbazx", "bа😀", "ba\n", "bax", "fo", "", "foox"])
case("format date", {"type": "string", "format": "date"},
     ["2024-02-29", "2023-02-28", "2023-02-29", "2000-02-29", "1900-02-29", "2023-04-31", "2023-04-30", "2023-12-31",
      "2023-13-01", "2023-00-10", "2023-01-00", "0000-01-01", "2023-1-01", "20230101", "9999-12-31"])
case("format time", {"type": "string", "format": "time"},
     ["12:34:56Z", "23:59:59.123+05:30", "00:00:00-00:00", "24:00:00Z", "12:60:00Z", "12:34:56", "12:34:56.Z",
      "1:02:03Z"])
case("format date-time", {"type": "string", "format": "date-time"},
     ["2024-01-15T12:34:56Z", "2024-02-29T00:00:00.5+01:00", "2023-02-29T00:00:00Z", "2024-01-15 12:34:56Z",
      "2024-01-15T12:34:56"])
case("format uuid", {"type": "string", "format": "uuid"},
     ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "123e4567e89b12d3a456426614174000",
      "123e4567-e89b-12d3-a456-42661417400", "g23e4567-e89b-12d3-a456-426614174000"])
case("format email", {"type": "string", "format": "email"},
     ["ann@example.com", "a.b+c@mail.example.org", "no-at-sign", Skip("ann@localhost", "a simple subset of email")])

# Integers and numbers with bounds.
case("integer minimum 0", {"type": "integer", "minimum": 0}, [0, 1, 99, -1, Raw("-0", skip="0 is written without a sign")])
case("integer 1 to 12", {"type": "integer", "minimum": 1, "maximum": 12}, list(range(-2, 16)) + [100, 112])
case("integer -5 to 300", {"type": "integer", "minimum": -5, "maximum": 300},
     [-6, -5, -1, 0, 9, 10, 99, 100, 299, 300, 301, -50, 3000])
case("integer exclusive bounds", {"type": "integer", "exclusiveMinimum": 10, "exclusiveMaximum": 20},
     [10, 11, 19, 20, 15, 9, 21])
case("integer only a maximum", {"type": "integer", "maximum": -10}, [-10, -11, -9999, -9, 0, 10])
case("integer, draft 4 exclusive flags",
     {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 5, "exclusiveMaximum": True},
     [0, 1, 4, 5, -1, 6], draft=4)
case("integer, fractional bounds", {"type": "integer", "minimum": 1.5, "maximum": 9.5}, [1, 2, 9, 10, 0])
case("number minimum 0", {"type": "number", "minimum": 0},
     [0, 0.0, 1.5, 1e-300, 100, -0.5, -1, -1e-300, Skip(-0.0, "0 is written without a sign")])
case("number exclusiveMinimum 0", {"type": "number", "exclusiveMinimum": 0},
     [0.5, 1, 1e-300, 0, 0.0, -1, Raw("0e10"), Raw("0.000"), Raw("1e-400"), Raw("0.0001e-2")])

case("number, lower bounds implied by 0", {"type": "number", "minimum": -5, "exclusiveMinimum": 0},
     [0.5, 3, 1e-5, 0, -1, -0.5, "1"])

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema_cases.json"), "w", encoding="utf-8") as f:
    json.dump(CASES, f, ensure_ascii=False, indent=1)
    f.write("\n")
print(len(CASES), "schemas,", sum(len(c["docs"]) for c in CASES), "documents")
