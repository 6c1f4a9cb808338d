// turnlog inspector: an approval's edited arguments are checked against the tool's
// JSON schema before the answers are sent. An edit that does not fit is not sent:
// the error names the field, as the server would. The check covers the common
// keywords (type, enum, const, bounds, lengths, pattern, items, properties, required,
// additionalProperties, allOf/anyOf/oneOf/not, local $ref); the server checks the
// whole schema again, so a keyword this does not know is left to it.
(function () {
  "use strict";

  var types = {
    "null": function (v) { return v === null; },
    "boolean": function (v) { return typeof v === "boolean"; },
    "number": function (v) { return typeof v === "number"; },
    "integer": function (v) { return typeof v === "number" && Number.isInteger(v); },
    "string": function (v) { return typeof v === "string"; },
    "array": function (v) { return Array.isArray(v); },
    "object": function (v) { return v !== null && typeof v === "object" && !Array.isArray(v); }
  };

  function typeOf(v) {
    if (v === null) { return "null"; }
    if (Array.isArray(v)) { return "array"; }
    if (typeof v === "number") { return Number.isInteger(v) ? "integer" : "number"; }
    return typeof v;
  }

  function equal(a, b) {
    if (a === b) { return true; }
    if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") { return false; }
    if (Array.isArray(a) !== Array.isArray(b)) { return false; }
    var ka = Object.keys(a), kb = Object.keys(b);
    if (ka.length !== kb.length) { return false; }
    return ka.every(function (k) { return Object.prototype.hasOwnProperty.call(b, k) && equal(a[k], b[k]); });
  }

  function has(o, k) { return Object.prototype.hasOwnProperty.call(o, k); }

  // resolve follows a local reference ("#", "#/$defs/x") in the root schema.
  function resolve(root, ref) {
    if (ref === "#") { return root; }
    if (ref.indexOf("#/") !== 0) { return undefined; } // not local: the server's to check
    var node = root;
    ref.slice(2).split("/").forEach(function (part) {
      part = decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~");
      node = node !== undefined && node !== null && typeof node === "object" ? node[part] : undefined;
    });
    return node;
  }

  // check returns the first problem of v against schema — {path: [...], message} —
  // or null. depth bounds a schema that refers to itself.
  function check(root, schema, v, path, depth) {
    if (schema === true || schema === undefined || depth > 64) { return null; }
    if (schema === false) { return { path: path, message: "is not allowed here" }; }
    if (typeof schema !== "object" || schema === null) { return null; }
    var bad = function (message, at) { return { path: at || path, message: message }; };
    var p;
    if (typeof schema.$ref === "string") {
      p = check(root, resolve(root, schema.$ref), v, path, depth + 1);
      if (p) { return p; }
    }
    if (has(schema, "type")) {
      var want = Array.isArray(schema.type) ? schema.type : [schema.type];
      var fits = want.some(function (t) { return types[t] ? types[t](v) : true; });
      if (!fits) { return bad("must be " + want.join(" or ") + ", not " + typeOf(v)); }
    }
    if (has(schema, "const") && !equal(schema["const"], v)) {
      return bad("must be " + JSON.stringify(schema["const"]));
    }
    if (Array.isArray(schema["enum"]) && !schema["enum"].some(function (e) { return equal(e, v); })) {
      return bad("must be one of " + schema["enum"].map(function (e) { return JSON.stringify(e); }).join(", "));
    }
    if (typeof v === "number") {
      if (typeof schema.minimum === "number" && v < schema.minimum) { return bad("must be at least " + schema.minimum + ", not " + v); }
      if (typeof schema.maximum === "number" && v > schema.maximum) { return bad("must be at most " + schema.maximum + ", not " + v); }
      if (typeof schema.exclusiveMinimum === "number" && v <= schema.exclusiveMinimum) { return bad("must be more than " + schema.exclusiveMinimum + ", not " + v); }
      if (typeof schema.exclusiveMaximum === "number" && v >= schema.exclusiveMaximum) { return bad("must be less than " + schema.exclusiveMaximum + ", not " + v); }
      if (typeof schema.multipleOf === "number" && schema.multipleOf > 0) {
        var q = v / schema.multipleOf;
        if (Math.abs(q - Math.round(q)) > 1e-9) { return bad("must be a multiple of " + schema.multipleOf); }
      }
    }
    if (typeof v === "string") {
      var n = Array.from(v).length; // code points, as JSON schema counts
      if (typeof schema.minLength === "number" && n < schema.minLength) { return bad("must be at least " + schema.minLength + " characters long"); }
      if (typeof schema.maxLength === "number" && n > schema.maxLength) { return bad("must be at most " + schema.maxLength + " characters long"); }
      if (typeof schema.pattern === "string") {
        var re = null;
        try { re = new RegExp(schema.pattern, "u"); } catch (e) { re = null; } // the server's to check
        if (re && !re.test(v)) { return bad("must match " + schema.pattern); }
      }
    }
    if (Array.isArray(v)) {
      if (typeof schema.minItems === "number" && v.length < schema.minItems) { return bad("must hold at least " + schema.minItems + " items"); }
      if (typeof schema.maxItems === "number" && v.length > schema.maxItems) { return bad("must hold at most " + schema.maxItems + " items"); }
      if (schema.uniqueItems === true) {
        for (var i = 0; i < v.length; i++) {
          for (var j = 0; j < i; j++) {
            if (equal(v[i], v[j])) { return bad("items " + j + " and " + i + " are the same"); }
          }
        }
      }
      var prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
      for (var k = 0; k < v.length; k++) {
        var itemSchema = k < prefix.length ? prefix[k] : schema.items;
        p = check(root, itemSchema, v[k], path.concat(String(k)), depth + 1);
        if (p) { return p; }
      }
    }
    if (types.object(v)) {
      var keys = Object.keys(v);
      if (typeof schema.minProperties === "number" && keys.length < schema.minProperties) { return bad("must have at least " + schema.minProperties + " properties"); }
      if (typeof schema.maxProperties === "number" && keys.length > schema.maxProperties) { return bad("must have at most " + schema.maxProperties + " properties"); }
      if (Array.isArray(schema.required)) {
        for (var r = 0; r < schema.required.length; r++) {
          if (!has(v, schema.required[r])) { return bad("is required", path.concat(schema.required[r])); }
        }
      }
      var props = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
      var patterns = schema.patternProperties && typeof schema.patternProperties === "object" ? schema.patternProperties : {};
      for (var x = 0; x < keys.length; x++) {
        var key = keys[x], matched = false;
        if (has(props, key)) {
          matched = true;
          p = check(root, props[key], v[key], path.concat(key), depth + 1);
          if (p) { return p; }
        }
        for (var pat in patterns) {
          if (!has(patterns, pat)) { continue; }
          var pre = null;
          try { pre = new RegExp(pat, "u"); } catch (e) { pre = null; }
          if (pre && pre.test(key)) {
            matched = true;
            p = check(root, patterns[pat], v[key], path.concat(key), depth + 1);
            if (p) { return p; }
          }
        }
        if (!matched && has(schema, "additionalProperties")) {
          if (schema.additionalProperties === false) { return bad("is not a property the tool takes", path.concat(key)); }
          p = check(root, schema.additionalProperties, v[key], path.concat(key), depth + 1);
          if (p) { return p; }
        }
      }
    }
    if (Array.isArray(schema.allOf)) {
      for (var a = 0; a < schema.allOf.length; a++) {
        p = check(root, schema.allOf[a], v, path, depth + 1);
        if (p) { return p; }
      }
    }
    if (Array.isArray(schema.anyOf) && !schema.anyOf.some(function (s) { return !check(root, s, v, path, depth + 1); })) {
      return bad("fits none of the schemas it may fit (anyOf)");
    }
    if (Array.isArray(schema.oneOf)) {
      var fit = schema.oneOf.filter(function (s) { return !check(root, s, v, path, depth + 1); }).length;
      if (fit !== 1) { return bad(fit === 0 ? "fits none of the schemas it may fit (oneOf)" : "fits more than one of the schemas (oneOf)"); }
    }
    if (has(schema, "not") && !check(root, schema.not, v, path, depth + 1)) {
      return bad("fits a schema it must not (not)");
    }
    return null;
  }

  // problem checks one edit (the textarea's text) against its schema: null when it
  // fits, else {field, message}, the field named as the server names it.
  function problem(text, schemaText, field) {
    var v;
    try { v = JSON.parse(text); } catch (e) { return { field: field, message: "must be a JSON object, as the tool takes" }; }
    if (!types.object(v)) { return { field: field, message: "must be a JSON object, as the tool takes" }; }
    if (!schemaText) { return null; }
    var schema;
    try { schema = JSON.parse(schemaText); } catch (e) { return null; }
    var p = check(schema, schema, v, [], 0);
    if (!p) { return null; }
    return { field: field + "." + (p.path.length ? p.path.join(".") : "$"), message: p.message };
  }
  window.turnlogArguments = { problem: problem };

  var form = document.querySelector("form.answers");
  if (!form) { return; }
  form.addEventListener("submit", function (e) {
    var first = null;
    form.querySelectorAll("textarea[data-field]").forEach(function (area) {
      var id = area.name.slice("arguments.".length);
      var chosen = form.querySelector('input[type=radio][name="choice.' + id + '"]:checked');
      var out = document.getElementById("arguments-error-" + id);
      var p = chosen && chosen.value === "edit" ? problem(area.value, area.dataset.schema, area.dataset.field) : null;
      if (p) {
        out.textContent = "Not sent: " + p.field + ": " + p.message;
        out.hidden = false;
        area.setAttribute("aria-invalid", "true");
        first = first || area;
      } else {
        out.textContent = "";
        out.hidden = true;
        area.removeAttribute("aria-invalid");
      }
    });
    if (first) {
      e.preventDefault();
      first.focus();
    }
  });
}());
