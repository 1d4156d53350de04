import Foundation

/// A JSON value as parsed, keeping booleans apart from numbers (which
/// JSONSerialization does not reliably do on Linux).
enum JSONValue: Equatable, Decodable {
    case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    static func parse(_ data: Data) throws -> JSONValue { try JSONDecoder().decode(JSONValue.self, from: data) }

    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }
    var string: String? { if case .string(let s) = self { return s }; return nil }
    var object: [String: JSONValue]? { if case .object(let o) = self { return o }; return nil }
    var array: [JSONValue]? { if case .array(let a) = self { return a }; return nil }
}

/// An OpenAPI 3.0 document and the checks the tests need: is the document
/// well formed where it matters (paths, operations, responses, every `$ref`
/// resolvable), and does an answer match its operation's response schema.
///
/// The schema checker covers the subset the console's document uses: type,
/// nullable, required, properties, additionalProperties, items, enum, format
/// date-time, and `$ref` into the document. Anything else in a schema is
/// reported, so the document cannot silently use what is not checked.
struct OpenAPIContract {
    let document: JSONValue
    static let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
    static let schemaKeywords: Set<String> = ["type", "nullable", "required", "properties", "additionalProperties", "items",
                                              "enum", "format", "$ref", "description"]

    init(_ data: Data) throws { document = try JSONValue.parse(data) }
    init(_ document: JSONValue) { self.document = document }

    /// What is wrong with the document itself (empty when nothing is).
    func documentProblems() -> [String] {
        var problems: [String] = []
        if !(document["openapi"]?.string?.hasPrefix("3.0.") ?? false) { problems.append("openapi is not 3.0.x") }
        if document["info"]?["title"]?.string == nil || document["info"]?["version"]?.string == nil {
            problems.append("info.title and info.version are required")
        }
        let schemes = document["components"]?["securitySchemes"]?.object ?? [:]
        func checkSecurity(_ value: JSONValue?, at place: String) {
            for requirement in value?.array ?? [] {
                for name in (requirement.object ?? [:]).keys where schemes[name] == nil {
                    problems.append("\(place): security scheme \(name) is not defined")
                }
            }
        }
        checkSecurity(document["security"], at: "security")
        guard let paths = document["paths"]?.object, !paths.isEmpty else { return problems + ["no paths"] }
        var operationIds = Set<String>()
        for (path, item) in paths {
            guard path.hasPrefix("/"), let item = item.object else { problems.append("\(path): not a path item"); continue }
            let templated = Set(path.split(separator: "/").filter { $0.hasPrefix("{") }.map { String($0.dropFirst().dropLast()) })
            let operations = item.filter { Self.methods.contains($0.key) }
            if operations.isEmpty { problems.append("\(path): no operations") }
            for key in item.keys where !Self.methods.contains(key) && !["parameters", "summary", "description"].contains(key) {
                problems.append("\(path): unknown key \(key)")
            }
            for (method, operation) in operations {
                let place = "\(method.uppercased()) \(path)"
                if let id = operation["operationId"]?.string, !operationIds.insert(id).inserted { problems.append("\(place): operationId \(id) used twice") }
                checkSecurity(operation["security"], at: place)
                let parameters = ((item["parameters"]?.array ?? []) + (operation["parameters"]?.array ?? [])).map(resolved)
                for parameter in parameters {
                    if parameter["name"]?.string == nil || !["query", "header", "path", "cookie"].contains(parameter["in"]?.string ?? "") {
                        problems.append("\(place): a parameter without name or in")
                    }
                    if parameter["schema"] == nil { problems.append("\(place): parameter \(parameter["name"]?.string ?? "?") has no schema") }
                }
                let declared = Set(parameters.filter { $0["in"]?.string == "path" && $0["required"] == .bool(true) }.compactMap { $0["name"]?.string })
                if declared != templated { problems.append("\(place): path parameters \(templated.sorted()) declared as \(declared.sorted())") }
                guard let responses = operation["responses"]?.object, !responses.isEmpty else {
                    problems.append("\(place): no responses"); continue
                }
                for (status, response) in responses {
                    if status != "default", !(Int(status).map { (100...599).contains($0) } ?? false) {
                        problems.append("\(place): response key \(status) is not a status")
                    }
                    let response = resolved(response)
                    if response["description"]?.string == nil { problems.append("\(place) \(status): no description") }
                    for (type, media) in response["content"]?.object ?? [:] {
                        guard let schema = media["schema"] else { problems.append("\(place) \(status) \(type): no schema"); continue }
                        problems += schemaProblems(schema, at: "\(place) \(status) \(type)")
                    }
                }
                if let body = operation["requestBody"].map(resolved) {
                    for (type, media) in body["content"]?.object ?? [:] {
                        problems += media["schema"].map { schemaProblems($0, at: "\(place) request \(type)") } ?? ["\(place) request: no schema"]
                    }
                }
            }
        }
        problems += unresolvedReferences(in: document, at: "#")
        return problems
    }

    /// Every `$ref` anywhere must point at something in the document.
    private func unresolvedReferences(in value: JSONValue, at place: String) -> [String] {
        switch value {
        case .object(let members):
            var problems: [String] = []
            if let reference = members["$ref"] {
                if let text = reference.string, lookUp(text) != nil {} else { problems.append("\(place): $ref \(reference) does not resolve") }
            }
            for (key, member) in members { problems += unresolvedReferences(in: member, at: place + "/" + key) }
            return problems
        case .array(let items):
            return items.enumerated().flatMap { unresolvedReferences(in: $1, at: "\(place)/\($0)") }
        default:
            return []
        }
    }

    /// A schema uses only what `problems(in:against:)` checks, and only known types.
    private func schemaProblems(_ schema: JSONValue, at place: String, seen: Set<String> = []) -> [String] {
        guard let members = schema.object else { return ["\(place): a schema is not an object"] }
        if let reference = members["$ref"]?.string {
            guard !seen.contains(reference) else { return [] }
            guard let target = lookUp(reference) else { return ["\(place): $ref \(reference) does not resolve"] }
            return schemaProblems(target, at: reference, seen: seen.union([reference]))
        }
        var problems = members.keys.filter { !Self.schemaKeywords.contains($0) }.map { "\(place): schema keyword \($0) is not checked by the tests" }
        if let type = members["type"]?.string, !["object", "array", "string", "integer", "number", "boolean"].contains(type) {
            problems.append("\(place): unknown type \(type)")
        }
        if members["type"]?.string == "array", members["items"] == nil { problems.append("\(place): an array without items") }
        let properties = members["properties"]?.object ?? [:]
        for name in members["required"]?.array ?? [] where properties[name.string ?? ""] == nil {
            problems.append("\(place): required \(name) is not among the properties")
        }
        for (name, property) in properties { problems += schemaProblems(property, at: "\(place).\(name)", seen: seen) }
        if let items = members["items"] { problems += schemaProblems(items, at: "\(place)[]", seen: seen) }
        if let extra = members["additionalProperties"], extra != .bool(false), extra != .bool(true) {
            problems += schemaProblems(extra, at: "\(place).*", seen: seen)
        }
        return problems
    }

    func lookUp(_ reference: String) -> JSONValue? {
        guard reference.hasPrefix("#/") else { return nil }
        var value: JSONValue? = document
        for part in reference.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
            let key = part.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            value = value?[key]
        }
        return value
    }

    func resolved(_ value: JSONValue) -> JSONValue {
        var value = value, hops = 0
        while let reference = value["$ref"]?.string, let target = lookUp(reference), hops < 20 { value = target; hops += 1 }
        return value
    }

    /// The operation `method` on a concrete path (query ignored), matching `{parameters}` to one segment.
    func operation(_ method: String, _ path: String) -> JSONValue? {
        let concrete = path.split(separator: "?", maxSplits: 1)[0].split(separator: "/", omittingEmptySubsequences: false)
        for (template, item) in document["paths"]?.object ?? [:] {
            let parts = template.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == concrete.count,
                  zip(parts, concrete).allSatisfy({ $0.hasPrefix("{") || $0 == $1 }) else { continue }
            if let operation = item[method.lowercased()] { return operation }
        }
        return nil
    }

    /// Why an answer does not follow the document (empty when it does): the
    /// status must be one the operation lists, the content type one that
    /// response has, and a JSON body must match its schema.
    func problems(method: String, path: String, status: Int, contentType: String?, body: Data) -> [String] {
        let place = "\(method) \(path) \(status)"
        guard let operation = operation(method, path) else { return ["\(method) \(path): no such operation in the document"] }
        guard let listed = operation["responses"]?[String(status)] ?? operation["responses"]?["default"] else {
            return ["\(place): the operation does not list this status"]
        }
        let response = resolved(listed)
        let content = response["content"]?.object ?? [:]
        if content.isEmpty { return body.isEmpty ? [] : ["\(place): a body where the document says none"] }
        let type = (contentType ?? "").split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased()
        guard let media = content[type] else { return ["\(place): content type \(type) is not among \(content.keys.sorted())"] }
        guard type == "application/json", let schema = media["schema"] else { return [] }
        let value: JSONValue
        do { value = try JSONValue.parse(body) } catch { return ["\(place): the body is not JSON: \(error)"] }
        return problems(in: value, against: schema, at: place)
    }

    /// Why `value` does not match `schema` (empty when it does).
    func problems(in value: JSONValue, against schema: JSONValue, at place: String = "$") -> [String] {
        if let reference = schema["$ref"]?.string {
            guard let target = lookUp(reference) else { return ["\(place): $ref \(reference) does not resolve"] }
            return problems(in: value, against: target, at: place)
        }
        if value == .null {
            return schema["nullable"] == .bool(true) ? [] : ["\(place): null where it may not be"]
        }
        var problems: [String] = []
        if let allowed = schema["enum"]?.array, !allowed.contains(value) { problems.append("\(place): \(value) is not one of \(allowed)") }
        switch (schema["type"]?.string, value) {
        case (nil, _), ("boolean", .bool), ("number", .number), ("array", .array), ("object", .object):
            break
        case ("integer", .number(let n)) where n.rounded() == n:
            break
        case ("string", .string(let text)):
            if schema["format"]?.string == "date-time", Self.dateTime(text) == nil { problems.append("\(place): \(text) is not an ISO 8601 date-time") }
        case (let type?, _):
            return problems + ["\(place): \(value) is not of type \(type)"]
        }
        if case .object(let members) = value {
            let properties = schema["properties"]?.object ?? [:]
            for name in schema["required"]?.array?.compactMap(\.string) ?? [] where members[name] == nil {
                problems.append("\(place): \(name) is required and missing")
            }
            for (name, member) in members {
                if let property = properties[name] {
                    problems += self.problems(in: member, against: property, at: "\(place).\(name)")
                } else if let extra = schema["additionalProperties"] {
                    if extra == .bool(false) { problems.append("\(place): \(name) is not in the document") }
                    else if extra != .bool(true) { problems += self.problems(in: member, against: extra, at: "\(place).\(name)") }
                }
            }
        }
        if case .array(let items) = value, let itemSchema = schema["items"] {
            for (index, item) in items.enumerated() { problems += self.problems(in: item, against: itemSchema, at: "\(place)[\(index)]") }
        }
        return problems
    }

    static func dateTime(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
