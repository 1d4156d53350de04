import Foundation

/// A TOML value as the recorder's config files use it.
public enum TOMLValue: Equatable, Sendable {
    case string(String)
    case integer(Int)
    case float(Double)
    case boolean(Bool)

    var typeName: String {
        switch self {
        case .string: return "a string"
        case .integer: return "an integer"
        case .float: return "a number"
        case .boolean: return "a boolean"
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

/// The subset of TOML the config files need: `[table]` and `[dotted.table]`
/// headers, `key = value` with basic ("…") and literal ('…') strings,
/// integers (with `_` separators), floats, booleans and `#` comments.
/// Arrays, inline tables and multi-line strings are refused with a clear
/// error rather than half-supported. A hand-written parser keeps exact line
/// numbers for every key, which the error messages rely on.
public struct TOMLDocument: Equatable, Sendable {
    /// Keys by full dotted path, e.g. `recording.chunk_duration_ms`.
    public private(set) var entries: [String: TOMLEntry] = [:]
    /// Table paths in the order they were declared.
    public private(set) var tables: [String] = []

    public init() {}

    public init(parsing text: String, file: String) throws {
        var current = ""
        var lineNumber = 0
        // TOML ends lines with LF or CRLF (Windows editors). Swift reads "\r\n" as one
        // Character, so splitting on "\n" alone would leave a CRLF file as one line.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            lineNumber += 1
            do {
                try parseLine(String(rawLine), current: &current, lineNumber: lineNumber)
            } catch let failure as ScanFailure {
                throw TOMLError(file: file, line: lineNumber, reason: failure.reason)
            }
        }
    }

    private mutating func parseLine(_ rawLine: String, current: inout String, lineNumber: Int) throws {
        func fail(_ reason: String) -> ScanFailure { ScanFailure(reason) }
        var scanner = LineScanner(rawLine)
        scanner.skipSpaces()
        if scanner.atEndOrComment { return }
        if scanner.peek == "[" {
            scanner.advance()
            if scanner.peek == "[" { throw fail("arrays of tables ([[…]]) are not supported") }
            let path = try scanner.readKeyPath(until: "]")
            guard scanner.peek == "]" else { throw fail("expected ']' to close the table header") }
            scanner.advance()
            scanner.skipSpaces()
            guard scanner.atEndOrComment else { throw fail("unexpected text after the table header") }
            let joined = path.joined(separator: ".")
            if tables.contains(joined) { throw fail("table [\(joined)] is declared twice") }
            tables.append(joined)
            current = joined
            return
        }
        let keyPath = try scanner.readKeyPath(until: "=")
        guard scanner.peek == "=" else { throw fail("expected '=' after the key '\(keyPath.joined(separator: "."))'") }
        scanner.advance()
        scanner.skipSpaces()
        let value = try scanner.readValue()
        scanner.skipSpaces()
        guard scanner.atEndOrComment else { throw fail("unexpected text after the value") }
        let full = (current.isEmpty ? [] : [current]) + keyPath
        let key = full.joined(separator: ".")
        if entries[key] != nil { throw fail("key '\(key)' is set twice") }
        entries[key] = TOMLEntry(value: value, line: lineNumber)
    }

    public subscript(key: String) -> TOMLEntry? { entries[key] }
}

/// What went wrong on a line; the parser adds the file and line number.
private struct ScanFailure: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// Character scanner over one line.
private struct LineScanner {
    private let chars: [Character]
    private var index = 0
    init(_ line: String) { chars = Array(line.hasSuffix("\r") ? String(line.dropLast()) : line) }

    var peek: Character? { index < chars.count ? chars[index] : nil }
    var atEndOrComment: Bool { peek == nil || peek == "#" }
    mutating func advance() { index += 1 }
    mutating func skipSpaces() { while peek == " " || peek == "\t" { advance() } }

    mutating func readKeyPath(until terminator: Character) throws -> [String] {
        var parts: [String] = []
        while true {
            skipSpaces()
            guard let c = peek else { throw ScanFailure("unexpected end of line in a key") }
            if c == "\"" || c == "'" {
                parts.append(try readString(quote: c))
            } else {
                var bare = ""
                while let c = peek, c.isLetter || c.isNumber || c == "_" || c == "-" {
                    bare.append(c); advance()
                }
                if bare.isEmpty { throw ScanFailure("expected a key, found '\(c)'") }
                parts.append(bare)
            }
            skipSpaces()
            if peek == "." { advance(); continue }
            if peek == terminator { return (parts) }
            throw ScanFailure(peek.map { "unexpected '\($0)' in a key" } ?? "expected '\(terminator)'")
        }
    }

    mutating func readValue() throws -> TOMLValue {
        guard let c = peek else { throw ScanFailure("missing value after '='") }
        switch c {
        case "\"", "'":
            if index + 2 < chars.count, chars[index + 1] == c, chars[index + 2] == c {
                throw ScanFailure("multi-line strings are not supported")
            }
            return .string(try readString(quote: c))
        case "[": throw ScanFailure("arrays are not supported here")
        case "{": throw ScanFailure("inline tables are not supported; use a [table] header")
        default:
            var token = ""
            while let c = peek, c != " ", c != "\t", c != "#" { token.append(c); advance() }
            if token == "true" { return (.boolean(true)) }
            if token == "false" { return (.boolean(false)) }
            if let number = try TOMLNumber.parse(token) { return number }
            throw ScanFailure("'\(token)' is not a valid value (strings need quotes)")
        }
    }

    mutating func readString(quote: Character) throws -> String {
        advance()
        var out = ""
        while let c = peek {
            advance()
            if c == quote { return (out) }
            if c == "\\" && quote == "\"" {
                guard let e = peek else { break }
                advance()
                switch e {
                case "n": out.append("\n")
                case "t": out.append("\t")
                case "r": out.append("\r")
                case "\\": out.append("\\")
                case "\"": out.append("\"")
                case "u", "U":
                    let count = e == "u" ? 4 : 8
                    var hex = ""
                    for _ in 0..<count { if let h = peek { hex.append(h); advance() } }
                    guard hex.count == count, let v = UInt32(hex, radix: 16), let s = Unicode.Scalar(v) else {
                        throw ScanFailure("invalid unicode escape \\\(e)\(hex)")
                    }
                    out.unicodeScalars.append(s)
                default: throw ScanFailure("invalid escape '\\\(e)' in a string")
                }
            } else {
                out.append(c)
            }
        }
        throw ScanFailure("unterminated string (missing closing \(quote))")
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

    private static func matches(_ pattern: NSRegularExpression, _ token: String) -> Bool {
        pattern.firstMatch(in: token, range: NSRange(token.startIndex..., in: token)) != nil
    }

    /// The value of `token` if it looks like a number; nil if it does not; throws for a number out of range.
    static func parse(_ token: String) throws -> TOMLValue? {
        let plain = token.replacingOccurrences(of: "_", with: "")
        if matches(integer, token) {
            guard let value = Int(plain) else { throw ScanFailure("'\(token)' is out of range") }
            return .integer(value)
        }
        if matches(prefixed, token) {
            let radix = ["x": 16, "o": 8, "b": 2][String(plain.dropFirst().prefix(1))] ?? 10
            guard let value = Int(plain.dropFirst(2), radix: radix) else { throw ScanFailure("'\(token)' is out of range") }
            return .integer(value)
        }
        if matches(float, token) {
            guard let value = Double(plain), value.isFinite else { throw ScanFailure("'\(token)' is out of range") }
            return .float(value)
        }
        switch token {
        case "inf", "+inf": return .float(.infinity)
        case "-inf": return .float(-.infinity)
        case "nan", "+nan", "-nan": return .float(.nan)
        default: return nil
        }
    }
}
