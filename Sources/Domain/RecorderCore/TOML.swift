import Foundation

/// A TOML value as the recorder's config files use it.
public enum TOMLValue: Equatable, Sendable {
    case string(String)
    case integer(Int)
    case float(Double)
    case boolean(Bool)
    /// Elements may mix types and nest (TOML 1.0).
    case array([TOMLValue])

    var typeName: String {
        switch self {
        case .string: return "a string"
        case .integer: return "an integer"
        case .float: return "a number"
        case .boolean: return "a boolean"
        case .array: return "an array"
        }
    }
}

/// One `key = value` of a config file, with where it was written so that
/// validation errors can point at the line.
public struct TOMLEntry: Equatable, Sendable {
    public var value: TOMLValue
    public var line: Int
}

/// A parse error with the line it happened on.
public struct TOMLError: Error, CustomStringConvertible, Equatable {
    public var file: String
    public var line: Int
    public var reason: String
    public var description: String { "\(file):\(line): \(reason)" }
}

/// TOML 1.0 as far as config files need it: `[table]` headers; bare, quoted and
/// dotted keys; basic, literal and multi-line strings with every escape of the
/// spec; integers (decimal, hex, octal, binary) and floats by the spec's grammar;
/// booleans; arrays (nested, mixed, over several lines, with comments and a
/// trailing comma); `#` comments; LF or CRLF line ends. Inline tables, arrays of
/// tables and dates/times are refused with an error that says so rather than
/// half-supported. A hand-written parser keeps exact line numbers for every key,
/// which the error messages rely on.
public struct TOMLDocument: Equatable, Sendable {
    /// Keys by full dotted path, e.g. `recording.chunk_duration_ms`.
    public private(set) var entries: [String: TOMLEntry] = [:]
    /// Table paths in the order they were declared.
    public private(set) var tables: [String] = []
    /// The same, with each key part kept apart (a quoted key may hold a dot): what the
    /// document means as nested tables, for comparison with other TOML readers.
    private(set) var headerPaths: [[String]] = []
    private(set) var valuePaths: [[String]: TOMLValue] = [:]

    public init() {}

    public init(parsing text: String, file: String) throws {
        var parser = TOMLParser(text)
        do {
            try parser.parseDocument()
        } catch let failure as ScanFailure {
            throw TOMLError(file: file, line: failure.line ?? parser.line, reason: failure.reason)
        }
        headerPaths = parser.headers
        tables = headerPaths.map { $0.joined(separator: ".") }
        for (path, entry) in parser.values {
            let key = path.joined(separator: ".")
            // The flat view cannot tell `"a.b" = 1` from `a.b = 1`; refuse rather than pick one.
            if let other = entries[key] {
                throw TOMLError(file: file, line: max(entry.line, other.line),
                                reason: "key '\(key)' is set twice (a quoted key with a dot reads as a dotted key here)")
            }
            entries[key] = entry
            valuePaths[path] = entry.value
        }
    }

    public subscript(key: String) -> TOMLEntry? { entries[key] }
}

/// What went wrong; the parser adds the file and the line (its current one unless `line` says otherwise).
private struct ScanFailure: Error {
    let reason: String
    var line: Int?
    init(_ reason: String, line: Int? = nil) { self.reason = reason; self.line = line }
}

/// Recursive-descent parser over the document's Unicode scalars (not Characters: "\r\n" and a
/// quote followed by a combining mark are single Characters). The table rules follow the spec
/// as Python's tomllib applies them, so both accept the same documents.
private struct TOMLParser {
    private var text: [Unicode.Scalar]
    private var index = 0
    private(set) var line = 1
    /// Declared `[headers]`, in order.
    private(set) var headers: [[String]] = []
    /// Every key's value, by its full path.
    private(set) var values: [([String], TOMLEntry)] = []

    private enum Kind { case table, value }
    /// What each path holds so far: tables made by headers or dotted keys, and values.
    private var kinds: [[String]: Kind] = [:]
    private var valueLines: [[String]: Int] = [:]
    /// Tables declared by a header, or made by dotted keys in an earlier section: neither
    /// may be declared again, nor extended by dotted keys.
    private var closed: Set<[String]> = []
    /// Tables made by dotted keys in the current section; closed at the next header.
    private var pending: [[String]] = []
    private static let maxNesting = 100

    init(_ source: String) {
        // TOML's line end is LF or CRLF; after folding CRLF, any CR left is a lone one (an error).
        var scalars: [Unicode.Scalar] = []
        scalars.reserveCapacity(source.unicodeScalars.count)
        var pendingCR = false
        for s in source.unicodeScalars {
            if pendingCR { if s != "\n" { scalars.append("\r") }; pendingCR = false }
            if s == "\r" { pendingCR = true } else { scalars.append(s) }
        }
        if pendingCR { scalars.append("\r") }
        text = scalars
    }

    // MARK: scanning

    private var peek: Unicode.Scalar? { index < text.count ? text[index] : nil }
    private func peek(_ offset: Int) -> Unicode.Scalar? { index + offset < text.count ? text[index + offset] : nil }
    private mutating func advance() {
        if text[index] == "\n" { line += 1 }
        index += 1
    }
    private mutating func skipSpaces() { while peek == " " || peek == "\t" { advance() } }
    private func startsTriple(_ quote: Unicode.Scalar) -> Bool { peek == quote && peek(1) == quote && peek(2) == quote }

    /// How a character is named in an error: printable as itself, the rest by code point.
    private static func describe(_ s: Unicode.Scalar?) -> String {
        guard let s else { return "the end of the file" }
        switch s {
        case "\n": return "the end of the line"
        case "\r": return "a carriage return without a line feed"
        default:
            if s.properties.generalCategory == .control || s.properties.generalCategory == .format
                || s.properties.isWhitespace && s != " " {
                return String(format: "U+%04X", s.value)
            }
            return "'\(s)'"
        }
    }

    /// Control characters other than tab are not allowed in strings or comments (TOML 1.0).
    private static func isForbiddenControl(_ s: Unicode.Scalar) -> Bool {
        (s.value < 0x20 && s != "\t") || s.value == 0x7F
    }

    private func controlFailure(_ s: Unicode.Scalar, in place: String) -> ScanFailure {
        if s == "\r" { return ScanFailure("a carriage return without a line feed (lone CR) in \(place)") }
        return ScanFailure("control character \(Self.describe(s)) in \(place); write it as an escape in a basic string")
    }

    /// A `#` comment up to the end of the line.
    private mutating func skipComment() throws {
        guard peek == "#" else { return }
        advance()
        while let c = peek, c != "\n" {
            if Self.isForbiddenControl(c) { throw controlFailure(c, in: "a comment") }
            advance()
        }
    }

    /// After a header or a key/value: spaces, a comment, then the end of the line.
    private mutating func expectLineEnd(after what: String) throws {
        skipSpaces()
        try skipComment()
        guard let c = peek else { return }
        if c == "\n" { advance(); return }
        if c == "\r" { throw ScanFailure("a carriage return without a line feed (lone CR)") }
        throw ScanFailure("unexpected \(Self.describe(c)) after \(what)")
    }

    // MARK: document

    mutating func parseDocument() throws {
        var section: [String] = []
        while true {
            skipSpaces()
            guard let c = peek else { return }
            switch c {
            case "\n": advance()
            case "#": try expectLineEnd(after: "a comment")
            case "[":
                closed.formUnion(pending)
                pending.removeAll()
                section = try parseHeader()
                try expectLineEnd(after: "the table header")
            default:
                try parseKeyValue(section: section)
                try expectLineEnd(after: "the value")
            }
        }
    }

    private mutating func parseHeader() throws -> [String] {
        advance()
        if peek == "[" { throw ScanFailure("arrays of tables ([[…]]) are not supported; use one [table] per item") }
        skipSpaces()
        let path = try parseKey()
        guard peek == "]" else {
            throw ScanFailure("expected ']' to close the table header, found \(Self.describe(peek))")
        }
        advance()
        let name = path.joined(separator: ".")
        if closed.contains(path) { throw ScanFailure("table [\(name)] is declared twice") }
        try makeTable(path, for: "[\(name)]")
        closed.insert(path)
        headers.append(path)
        return path
    }

    /// Makes every table along `path`; fails where a value is already there.
    private mutating func makeTable(_ path: [String], for what: String) throws {
        for length in path.indices {
            let prefix = Array(path.prefix(length + 1))
            switch kinds[prefix] {
            case .value?:
                let at = valueLines[prefix].map { " on line \($0)" } ?? ""
                throw ScanFailure("\(what): '\(prefix.joined(separator: "."))' is already a value (set\(at)), not a table")
            case .table?: continue
            case nil: kinds[prefix] = .table
            }
        }
    }

    private mutating func parseKeyValue(section: [String]) throws {
        let keyLine = line
        let key = try parseKey()
        let name = (section + key).joined(separator: ".")
        guard peek == "=" else {
            throw ScanFailure("expected '=' after the key '\(key.joined(separator: "."))', found \(Self.describe(peek))")
        }
        advance()
        skipSpaces()
        let value = try parseValue(depth: 0)
        // Dotted keys make tables; those must not be tables declared elsewhere.
        for length in 1..<key.count {
            let table = section + key.prefix(length)
            if closed.contains(table) {
                throw ScanFailure("'\(name)': table [\(table.joined(separator: "."))] is declared elsewhere; dotted keys cannot add to it", line: keyLine)
            }
            pending.append(table)
        }
        let full = section + key
        do { try makeTable(Array(full.dropLast()), for: "'\(name)'") } catch let f as ScanFailure {
            throw ScanFailure(f.reason, line: keyLine)
        }
        if let existing = kinds[full] {
            let reason = existing == .table ? "key '\(name)' is already a table"
                : "key '\(name)' is set twice (first on line \(valueLines[full] ?? keyLine))"
            throw ScanFailure(reason, line: keyLine)
        }
        kinds[full] = .value
        valueLines[full] = keyLine
        values.append((full, TOMLEntry(value: value, line: keyLine)))
    }

    /// `a`, `"quoted"`, `'literal'` and dotted combinations, with spaces around the dots.
    private mutating func parseKey() throws -> [String] {
        var parts: [String] = []
        while true {
            skipSpaces()
            parts.append(try parseKeyPart())
            skipSpaces()
            guard peek == "." else { return parts }
            advance()
        }
    }

    private mutating func parseKeyPart() throws -> String {
        guard let c = peek else { throw ScanFailure("expected a key, found the end of the file") }
        if c == "\"" || c == "'" {
            if startsTriple(c) { throw ScanFailure("a multi-line string cannot be a key") }
            return c == "\"" ? try parseBasicString() : try parseLiteralString()
        }
        var bare = String.UnicodeScalarView()
        while let c = peek, Self.isBareKeyScalar(c) { bare.append(c); advance() }
        if bare.isEmpty {
            throw ScanFailure("expected a key, found \(Self.describe(c)) (bare keys are A-Z a-z 0-9 _ -; quote others)")
        }
        return String(bare)
    }

    private static func isBareKeyScalar(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x5F, 0x2D: return true
        default: return false
        }
    }

    // MARK: values

    private mutating func parseValue(depth: Int) throws -> TOMLValue {
        guard let c = peek else { throw ScanFailure("missing value at the end of the file") }
        switch c {
        case "\"": return .string(startsTriple(c) ? try parseMultiLineString(basic: true) : try parseBasicString())
        case "'": return .string(startsTriple(c) ? try parseMultiLineString(basic: false) : try parseLiteralString())
        case "[": return try parseArray(depth: depth + 1)
        case "{": throw ScanFailure("inline tables ({…}) are not supported; use a [table] header or dotted keys")
        case "\n", "#": throw ScanFailure("missing value after '='")
        default: break
        }
        var token = ""
        while let c = peek, !" \t\n\r#,]".unicodeScalars.contains(c) { token.unicodeScalars.append(c); advance() }
        if token.isEmpty { throw ScanFailure("expected a value, found \(Self.describe(c))") }
        if token == "true" { return .boolean(true) }
        if token == "false" { return .boolean(false) }
        if let number = try TOMLNumber.parse(token) { return number }
        if TOMLNumber.looksLikeDateOrTime(token) {
            throw ScanFailure("dates and times ('\(token)') are not supported; write it as a string")
        }
        if let first = token.unicodeScalars.first, "0123456789+-.".unicodeScalars.contains(first) {
            throw ScanFailure("'\(token)' is not a valid TOML number")
        }
        throw ScanFailure("'\(token)' is not a valid value (strings need quotes)")
    }

    /// `[ value, value, ]` over any number of lines, with comments between the values.
    private mutating func parseArray(depth: Int) throws -> TOMLValue {
        guard depth <= Self.maxNesting else { throw ScanFailure("arrays nested more than \(Self.maxNesting) deep") }
        let openLine = line
        advance()
        var items: [TOMLValue] = []
        try skipArraySpace(openLine: openLine)
        if peek == "]" { advance(); return .array(items) }
        while true {
            items.append(try parseValue(depth: depth))
            try skipArraySpace(openLine: openLine)
            guard let c = peek else { throw ScanFailure("unterminated array: missing ']'", line: openLine) }
            if c == "]" { advance(); return .array(items) }
            guard c == "," else { throw ScanFailure("expected ',' or ']' in the array, found \(Self.describe(c))") }
            advance()
            try skipArraySpace(openLine: openLine)
            if peek == "]" { advance(); return .array(items) }
        }
    }

    private mutating func skipArraySpace(openLine: Int) throws {
        while let c = peek {
            switch c {
            case " ", "\t", "\n": advance()
            case "#": try skipComment()
            case "\r": throw ScanFailure("a carriage return without a line feed (lone CR)")
            default: return
            }
        }
        throw ScanFailure("unterminated array: missing ']'", line: openLine)
    }

    private mutating func parseBasicString() throws -> String {
        advance()
        var out = String.UnicodeScalarView()
        while true {
            guard let c = peek, c != "\n" else {
                throw ScanFailure("unterminated string (missing closing \"; a basic string ends on its line, use \"\"\" for more)")
            }
            advance()
            if c == "\"" { return String(out) }
            if c == "\\" { try parseEscape(into: &out, multiLine: false); continue }
            if Self.isForbiddenControl(c) { throw controlFailure(c, in: "a string") }
            out.append(c)
        }
    }

    private mutating func parseLiteralString() throws -> String {
        advance()
        var out = String.UnicodeScalarView()
        while true {
            guard let c = peek, c != "\n" else {
                throw ScanFailure("unterminated string (missing closing '; a literal string ends on its line, use ''' for more)")
            }
            advance()
            if c == "'" { return String(out) }
            if Self.isForbiddenControl(c) { throw controlFailure(c, in: "a string") }
            out.append(c)
        }
    }

    /// `"""…"""` (escapes, line-ending backslash) or `'''…'''` (none); a newline right after
    /// the opening quotes is dropped, and up to two quotes may sit right before the closing ones.
    private mutating func parseMultiLineString(basic: Bool) throws -> String {
        let quote: Unicode.Scalar = basic ? "\"" : "'"
        let openLine = line
        advance(); advance(); advance()
        if peek == "\n" { advance() }
        var out = String.UnicodeScalarView()
        while true {
            guard let c = peek else {
                throw ScanFailure("unterminated multi-line string: missing closing \(quote)\(quote)\(quote)", line: openLine)
            }
            if startsTriple(quote) {
                advance(); advance(); advance()
                for _ in 0..<2 where peek == quote { out.append(quote); advance() }
                return String(out)
            }
            advance()
            if basic && c == "\\" { try parseEscape(into: &out, multiLine: true); continue }
            if c != "\n" && Self.isForbiddenControl(c) { throw controlFailure(c, in: "a string") }
            out.append(c)
        }
    }

    /// The escapes of TOML 1.0, after the backslash.
    private mutating func parseEscape(into out: inout String.UnicodeScalarView, multiLine: Bool) throws {
        guard let e = peek else { throw ScanFailure("unterminated string (ends after a '\\')") }
        switch e {
        case "b": out.append("\u{08}")
        case "t": out.append("\t")
        case "n": out.append("\n")
        case "f": out.append("\u{0C}")
        case "r": out.append("\r")
        case "\"": out.append("\"")
        case "\\": out.append("\\")
        case "u", "U":
            advance()
            let count = e == "u" ? 4 : 8
            var hex = ""
            for _ in 0..<count {
                guard let h = peek, h.properties.isASCIIHexDigit else {
                    throw ScanFailure("invalid escape '\\\(e)\(hex)': \\\(e) takes exactly \(count) hex digits")
                }
                hex.unicodeScalars.append(h)
                advance()
            }
            guard let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) else {
                throw ScanFailure("invalid escape '\\\(e)\(hex)': not a Unicode scalar value")
            }
            out.append(scalar)
            return
        case " ", "\t", "\n":
            // A backslash ending a line (multi-line strings only) drops it and all whitespace up to the next text.
            guard multiLine else { throw invalidEscape(e) }
            skipSpaces()
            guard peek == "\n" else {
                throw ScanFailure("a '\\' followed by spaces must end the line in a multi-line string; write '\\\\' for a backslash")
            }
            while let c = peek, c == " " || c == "\t" || c == "\n" { advance() }
            return
        default:
            throw invalidEscape(e)
        }
        advance()
    }

    private func invalidEscape(_ e: Unicode.Scalar) -> ScanFailure {
        let shown = e.properties.generalCategory == .control || e == " " ? "\\ followed by \(Self.describe(e))" : "'\\\(e)'"
        return ScanFailure("invalid escape \(shown) in a string (TOML has \\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX)")
    }
}

/// Numbers as TOML 1.0 writes them. Swift's own `Int(_:)`/`Double(_:)` take
/// more (`0x7D0` as a float, `002000`, `.5`, `_2000`), so the grammar is checked first.
enum TOMLNumber {
    private static let decimal = "[+-]?(?:0|[1-9](?:_?[0-9])*)"
    private static let digits = "[0-9](?:_?[0-9])*"
    private static let integer = try! NSRegularExpression(pattern: "^\(decimal)$")
    private static let prefixed = try! NSRegularExpression(
        pattern: "^0(?:x[0-9A-Fa-f](?:_?[0-9A-Fa-f])*|o[0-7](?:_?[0-7])*|b[01](?:_?[01])*)$")
    private static let float = try! NSRegularExpression(
        pattern: "^\(decimal)(?:\\.\(digits)(?:[eE][+-]?\(digits))?|[eE][+-]?\(digits))$")
    private static let dateOrTime = try! NSRegularExpression(pattern: "^(?:[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{2}:[0-9]{2})")

    private static func matches(_ pattern: NSRegularExpression, _ token: String) -> Bool {
        pattern.firstMatch(in: token, range: NSRange(token.startIndex..., in: token)) != nil
    }

    static func looksLikeDateOrTime(_ token: String) -> Bool { matches(dateOrTime, token) }

    /// The value of `token` if it looks like a number; nil if it does not; throws for a number out of range.
    fileprivate static func parse(_ token: String) throws -> TOMLValue? {
        let plain = token.replacingOccurrences(of: "_", with: "")
        if matches(integer, token) {
            guard let value = Int(plain) else { throw ScanFailure("'\(token)' is out of range (64-bit integers)") }
            return .integer(value)
        }
        if matches(prefixed, token) {
            let radix = ["x": 16, "o": 8, "b": 2][String(plain.dropFirst().prefix(1))] ?? 10
            guard let value = Int(plain.dropFirst(2), radix: radix) else {
                throw ScanFailure("'\(token)' is out of range (64-bit integers)")
            }
            return .integer(value)
        }
        if matches(float, token) {
            // tomllib would read an overflow as inf; in a config it is surely a typo.
            guard let value = Double(plain), value.isFinite else {
                throw ScanFailure("'\(token)' is out of range (beyond a 64-bit float)")
            }
            return .float(value)
        }
        switch token {
        case "inf", "+inf": return .float(.infinity)
        case "-inf": return .float(-.infinity)
        case "nan", "+nan": return .float(.nan)
        case "-nan": return .float(-Double.nan)
        default: return nil
        }
    }
}
