// JSON Schema and regular expressions as GBNF (grammar.h): what `response_format`,
// strict tool parameters and `pattern` compile to before the matcher runs them.
//
// The documents a schema's grammar allows are valid under the schema, written compactly:
// properties in the schema's order, no whitespace except one optional space after ':' and
// ',' (so a model sampled at random still ends: unbounded whitespace would let it wander).
// Numbers have at most 16 digits before and after the point (and in the exponent); strings
// escape only what JSON requires (\uXXXX for controls, never for a surrogate).
//
// Keywords enforced exactly:
//   type (and type arrays), enum, const (values written as compact JSON), nullable (OpenAPI);
//   properties, required, additionalProperties (false / true / a schema; absent: see
//     closed_objects); properties not listed come after the listed ones, their names
//     written without escapes and never one of the listed names;
//   items, prefixItems (draft 7: items as an array, additionalItems), minItems, maxItems;
//   minLength, maxLength (characters, an escape being one), pattern (below), format date,
//     time, date-time (RFC 3339, real calendar days), uuid, email (a simple subset);
//   integers' minimum, maximum, exclusiveMinimum, exclusiveMaximum (also draft 4's boolean
//     forms), as exact digit ranges; numbers' lower bound 0 (minimum or exclusiveMinimum);
//   anyOf; oneOf whose alternatives are of distinct types or distinct constants; allOf, and
//     $ref or anyOf beside other keywords, merged into one schema (Unsupported, strict or
//     not, where two members set the same keyword differently and no merge is exact);
//   $ref to "#" and JSON pointers in it ("#/$defs/Name", "#/definitions/Name", ~0 ~1 %XX):
//     each target one rule, so recursive schemas work.
// A schema without `type` whose keywords are all of one type (properties, minLength,
// minimum, ...) is taken as that type (integers for number keywords): a subset of what it
// allows. Annotations (title, description, default, examples, $schema, $id, $comment,
// deprecated, readOnly, writeOnly) are ignored.
// Not enforced (Unsupported when strict, ignored otherwise): minProperties, maxProperties,
// uniqueItems, multipleOf, other formats, other bounds on numbers, pattern or format beside
// minLength / maxLength (the pattern or format wins), oneOf whose alternatives may overlap
// (taken as anyOf), keywords beside enum/const other than type and the length, bound and
// required checks, counts over 10,000, and every other keyword (not, if, patternProperties,
// contains, ...).
#pragma once

#include <string>
#include <string_view>

namespace wick::text {

struct JsonSchemaOptions {
  // Strict (OpenAI's `strict: true`): a keyword the compiler cannot enforce is an error
  // (Unsupported naming it and its place). Not strict: such keywords are ignored, so the
  // grammar may allow documents they forbid.
  bool strict = false;
  // Objects without "additionalProperties" take no other properties (OpenAI's strict
  // semantics; documents stay valid either way since extra properties are optional).
  bool closed_objects = true;
};

// GBNF for the documents valid under `schema` (JSON text of a JSON Schema, draft 2020-12 /
// draft-07 keywords). InvalidArgument naming the schema path (e.g.
// "/properties/age/minimum") for text that is not JSON or not a schema, a $ref that does
// not resolve, recursion with no base case (a $ref whose every document holds itself, or
// that reaches itself before any character), a schema no document meets, nesting deeper
// than 128 schemas, or one too large once merges are expanded; Unsupported as described
// above.
std::string json_schema_to_gbnf(std::string_view schema, const JsonSchemaOptions& options = {});

// GBNF for any JSON value (object_only: any JSON object, OpenAI's "json_object").
std::string any_json_gbnf(bool object_only);

// GBNF whose root matches the texts the regular expression (ECMAScript syntax, as JSON
// Schema's `pattern`) matches whole, as if anchored at both ends: a subset of what an
// unanchored pattern allows, so documents stay valid. The texts are raw characters; a
// schema's string compiles them to their JSON-escaped form. InvalidArgument for a pattern
// that does not parse; Unsupported for what a grammar cannot express (backreferences,
// lookaround).
std::string regex_to_gbnf(std::string_view pattern);

}  // namespace wick::text
