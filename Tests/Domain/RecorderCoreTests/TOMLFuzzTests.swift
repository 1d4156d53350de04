import Foundation
import XCTest
@testable import RecorderCore

/// Differential fuzzing against Python's `tomllib` (the standard library's TOML 1.0 reader):
/// random small documents mixing valid and invalid pieces must be accepted by both or refused
/// by both, with the same values; each of our refusals names the file and a line of the document.
///
/// The default run is a small fixed-seed batch. For a long soak:
/// `ALLSPARK_FUZZ_TOML=200000 swift test --filter TOMLFuzzTests` (`ALLSPARK_FUZZ_SEED=n` picks the seed).
///
/// Deliberate differences, which the generator avoids or the comparison allows for: integers
/// beyond 64 bits (the spec says to refuse them; tomllib keeps them, the script reports them
/// as errors); floats that overflow to inf (refused here, inf in tomllib: counted, not failed); quoted keys with a
/// dot (not generated); inline tables, arrays of tables and dates (refused here with "not
/// supported": such a refusal of a document tomllib accepts is counted, not failed).
final class TOMLFuzzTests: XCTestCase {
    /// Reads hex-encoded UTF-8 documents, one a line; prints one canonical form or ERROR a line.
    static let script = #"""
import sys, struct, tomllib
def enc(v):
    if isinstance(v, bool): return "b1" if v else "b0"
    if isinstance(v, int):
        if not -2**63 <= v < 2**63: raise OverflowError("beyond 64 bits")
        return "i%d" % v
    if isinstance(v, float):
        if v != v: return "fnan"
        return "f%016x" % struct.unpack("<Q", struct.pack("<d", v))[0]
    if isinstance(v, str): return "s" + v.encode().hex()
    if isinstance(v, list): return "[" + ",".join(enc(x) for x in v) + "]"
    if isinstance(v, dict):
        keys = sorted(k.encode().hex() for k in v)
        return "{" + ",".join(k + ":" + enc(v[bytes.fromhex(k).decode()]) for k in keys) + "}"
    raise TypeError("unsupported: %r" % type(v))
for line in open(sys.argv[1]):
    try: out = enc(tomllib.loads(bytes.fromhex(line.strip()).decode()))
    except (tomllib.TOMLDecodeError, OverflowError, TypeError): out = "ERROR"
    print(out)
"""#

    func testAgreesWithPythonTomllib() throws {
        let environment = ProcessInfo.processInfo.environment
        let count = environment["ALLSPARK_FUZZ_TOML"].flatMap { Int($0) } ?? 1500
        let seed = environment["ALLSPARK_FUZZ_SEED"].flatMap { UInt64($0) } ?? 20_261_123
        let soak = environment["ALLSPARK_FUZZ_TOML"] != nil
        var generator = TOMLDocumentGenerator(seed: seed)
        var accepted = 0, refused = 0, unsupported = 0
        var mismatches: [String] = []
        var done = 0
        while done < count {
            let batch = (0..<min(5000, count - done)).map { _ in generator.document() }
            let theirs = try Self.tomllib(batch)
            for (document, expected) in zip(batch, theirs) {
                let lineCount = document.unicodeScalars.filter { $0 == "\n" }.count + 1
                do {
                    let ours = Self.canonical(try TOMLDocument(parsing: document, file: "fuzz.toml"))
                    if ours == expected { accepted += 1 } else {
                        mismatches.append("\(document.debugDescription)\n  ours:    \(ours)\n  tomllib: \(expected)")
                    }
                } catch let error as TOMLError {
                    if !error.description.hasPrefix("fuzz.toml:\(error.line): ") || !(1...lineCount).contains(error.line) {
                        mismatches.append("\(document.debugDescription)\n  error names no line of the document: \(error)")
                    } else if expected == "ERROR" {
                        refused += 1
                    } else if error.reason.contains("not supported") {
                        unsupported += 1
                    } else if error.reason.contains("beyond a 64-bit float"),
                              expected.contains("f7ff0000000000000") || expected.contains("ffff0000000000000") {
                        unsupported += 1
                    } else {
                        mismatches.append("\(document.debugDescription)\n  ours:    \(error)\n  tomllib: \(expected)")
                    }
                }
            }
            done += batch.count
        }
        XCTAssertTrue(mismatches.isEmpty, "\(mismatches.count) of \(count) documents (seed \(seed)) differ from tomllib:\n"
                      + mismatches.prefix(8).joined(separator: "\n"))
        // A generator that only makes broken documents (or only good ones) would prove little.
        XCTAssertGreaterThan(accepted, count / 5, "accepted \(accepted) of \(count)")
        XCTAssertGreaterThan(refused, count / 5, "refused \(refused) of \(count)")
        if soak {
            print("TOML fuzz, seed \(seed): \(count) documents, \(accepted) accepted and \(refused) refused by both, "
                  + "\(unsupported) refused on purpose (not supported, float overflow), \(mismatches.count) differences")
        }
    }

    /// Runs the script once over a whole batch.
    static func tomllib(_ documents: [String]) throws -> [String] {
        let python = ["/usr/bin/python3", "/usr/local/bin/python3"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let python else { throw XCTSkip("no python3 for the tomllib comparison") }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tomlfuzz-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let scriptURL = folder.appendingPathComponent("canon.py"), input = folder.appendingPathComponent("docs.hex")
        try script.write(to: scriptURL, atomically: true, encoding: .utf8)
        try documents.map(hex).joined(separator: "\n").appending("\n").write(to: input, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [scriptURL.path, input.path]
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if errorText.contains("No module named 'tomllib'") { throw XCTSkip("\(python) has no tomllib (Python < 3.11)") }
        guard process.terminationStatus == 0 else { throw NSError(domain: "tomllib", code: 1, userInfo: [NSLocalizedDescriptionKey: errorText]) }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, documents.count)
        return lines
    }

    static func hex(_ text: String) -> String { text.utf8.map { String(format: "%02x", $0) }.joined() }

    /// The same canonical form as the script: nested tables with sorted keys, floats by bit pattern.
    static func canonical(_ document: TOMLDocument) -> String {
        final class Table { var children: [String: Any] = [:] }
        let root = Table()
        func table(at path: ArraySlice<String>) -> Table {
            var node = root
            for part in path {
                if let next = node.children[part] as? Table { node = next } else {
                    let next = Table(); node.children[part] = next; node = next
                }
            }
            return node
        }
        for path in document.headerPaths { _ = table(at: path[...]) }
        for (path, value) in document.valuePaths { table(at: path.dropLast()).children[path.last!] = value }
        func encode(_ value: TOMLValue) -> String {
            switch value {
            case .boolean(let b): return b ? "b1" : "b0"
            case .integer(let i): return "i\(i)"
            case .float(let d): return d.isNaN ? "fnan" : String(format: "f%016llx", d.bitPattern)
            case .string(let s): return "s" + hex(s)
            case .array(let items): return "[" + items.map(encode).joined(separator: ",") + "]"
            }
        }
        func encode(_ table: Table) -> String {
            let keys = table.children.keys.map { (hex($0), $0) }.sorted { $0.0 < $1.0 }
            return "{" + keys.map { hexKey, key in
                let child = table.children[key]!
                return hexKey + ":" + ((child as? Table).map(encode) ?? encode(child as! TOMLValue))
            }.joined(separator: ",") + "}"
        }
        return encode(root)
    }
}

/// Small random TOML documents from a grammar, with valid and invalid pieces mixed in
/// (escapes, number forms, arrays, comments, keys that collide, CRLF and lone CR).
struct TOMLDocumentGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// SplitMix64: the same documents for the same seed on every platform.
    private mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    private mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    private mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    private mutating func pick(_ options: [String]) -> String { options[below(options.count)] }
    private mutating func repeated(_ range: ClosedRange<Int>, _ piece: (inout Self) -> String) -> String {
        (0..<(range.lowerBound + below(range.count))).map { _ in piece(&self) }.joined()
    }

    mutating func document() -> String {
        var text = ""
        for _ in 0..<(1 + below(5)) {
            switch below(100) {
            case 0..<10: text += spaces() + comment()
            case 10..<14: text += spaces()
            case 14..<30: text += "[" + spaces() + key() + spaces() + "]" + (chance(20) ? spaces() + comment() : "")
            default: text += key() + spaces() + "=" + spaces() + value(depth: 0) + (chance(15) ? spaces() + comment() : "")
            }
            text += pick(["\n", "\n", "\n", "\r\n", "\r\n", chance(10) ? "\r" : "\n"])
        }
        if chance(20) { text.removeLast() }   // no newline at the end of the file
        if chance(12) { text = mutate(text) }
        return text
    }

    private mutating func spaces() -> String { pick(["", "", " ", " ", "  ", "\t"]) }

    private mutating func comment() -> String {
        "#" + pick(["", " note", " a = 1", " \"x\" ' [", "\tté", " \u{1}", " \u{7F}", " \r", " ∂ 😀"])
    }

    private mutating func key() -> String {
        var parts = [keyPart()]
        if chance(30) { for _ in 0...below(2) { parts.append(keyPart()) } }
        return parts.joined(separator: pick([".", ".", " . ", ". "]))
    }

    private mutating func keyPart() -> String {
        if chance(4) { return pick(["é", "a b", "", "\"\"\"k\"\"\"", "'x", "[", "="]) }   // broken keys
        return pick(["a", "b", "c", "a", "b", "d", "e", "key", "x-y", "_k", "1", "A", "\"a\"", "\"a b\"", "'b'", "\"\"", "''",
                     "\"\\u0061\"", "\"é\"", "'ʞ'"])
    }

    private mutating func value(depth: Int) -> String {
        switch below(depth < 3 ? 100 : 80) {
        case 0..<20: return integer()
        case 20..<35: return float()
        case 35..<42: return pick(["true", "false", "true", "false", "True", "tru", "falsey"])
        case 42..<80: return string()
        default: return array(depth: depth + 1)
        }
    }

    private mutating func digits(_ alphabet: String, _ count: ClosedRange<Int>) -> String {
        let characters = Array(alphabet)
        var out = String(characters[below(characters.count)])
        for _ in 1..<(count.lowerBound + below(count.count)) {
            if chance(10) { out += chance(90) ? "_" : "__" }
            out.append(characters[below(characters.count)])
        }
        if chance(3) { out = chance(50) ? "_" + out : out + "_" }
        return out
    }

    private mutating func sign() -> String { pick(["", "", "", "+", "-"]) }

    private mutating func integer() -> String {
        switch below(10) {
        case 0: return sign() + "0"
        case 1: return pick(["0x", "0o", "0b", "+0x", "0X"]) + digits(pick(["0123456789abcdefABCDEF", "01234567", "01", "012"]), 1...6)
        case 2: return sign() + "0" + digits("0123456789", 1...3)            // leading zero: refused
        case 3: return sign() + "9" + digits("0123456789", 17...20)          // around the 64-bit edge
        default: return sign() + digits("123456789", 1...1) + (chance(70) ? digits("0123456789", 1...5) : "")
        }
    }

    private mutating func float() -> String {
        if chance(12) { return sign() + pick(["inf", "nan", "Inf", "NaN", "infinity"]) }
        if chance(8) { return pick([".5", "5.", "1.e3", "1e", "1.5.2", "1e+", "0.", "-.5", "1e_5", "1_.5", "1._5"]) }
        var text = sign() + (chance(20) ? "0" : digits("123456789", 1...1) + (chance(50) ? digits("0123456789", 1...3) : ""))
        let fraction = chance(70), exponent = !fraction || chance(30)
        if fraction { text += "." + digits("0123456789", 1...4) }
        if exponent { text += pick(["e", "E"]) + pick(["", "+", "-"]) + digits("0123456789", 1...2) }
        return text
    }

    private mutating func string() -> String {
        switch below(10) {
        case 0..<4: return "\"" + repeated(0...5, { $0.basicPiece(multiLine: false) }) + "\""
        case 4..<6: return "'" + repeated(0...5, { $0.literalPiece(multiLine: false) }) + "'"
        case 6..<8:
            return "\"\"\"" + (chance(40) ? "\n" : "") + repeated(0...6, { $0.basicPiece(multiLine: true) }) + pick(["", "", "\"", "\"\""]) + "\"\"\""
        default:
            return "'''" + (chance(40) ? "\n" : "") + repeated(0...6, { $0.literalPiece(multiLine: true) }) + pick(["", "", "'", "''"]) + "'''"
        }
    }

    private mutating func basicPiece(multiLine: Bool) -> String {
        switch below(100) {
        case 0..<48: return pick(["a", "z", " ", "é", "#", "'", "=", "[", "]", ",", "😀", "\t", "x y"])
        case 48..<72: return pick(["\\b", "\\t", "\\n", "\\f", "\\r", "\\\"", "\\\\", "\\u00e9", "\\u00E9", "\\U0001F600",
                                   "\\u0000", "\\u007F", "\\uFFFF", "\\U0010FFFF"])
        case 72..<78: return pick(["\\x41", "\\e", "\\u12", "\\uD800", "\\uDFFF", "\\U00110000", "\\ ", "\\a", "\\u+123",
                                   "\\U0000004", "\\/", "\\"])
        case 78..<81: return pick(["\u{1}", "\u{7F}", "\u{0}", "\u{1F}", "\r"])
        case 81..<84: return "\""
        default:
            guard multiLine else { return pick(["b", "\n"]) }
            return pick(["\n", "\r\n", "\\\n", "\\  \n   ", "\\\n\n  \t", "\\ x", "\"\"", "\\\r\n  "])
        }
    }

    private mutating func literalPiece(multiLine: Bool) -> String {
        switch below(100) {
        case 0..<65: return pick(["a", " ", "é", "\\", "\"", "\\n", "#", "\t", "😀", "$"])
        case 65..<68: return pick(["\u{1}", "\u{7F}", "\r"])
        case 68..<72: return "'"
        default: return multiLine ? pick(["\n", "\r\n", "''", "\n\n"]) : pick(["b", "\n"])
        }
    }

    private mutating func arraySpace() -> String { pick(["", "", " ", "\n", " # c\n", "\r\n", "\t", "\n  # \u{1}\n", "#x\r"]) }

    private mutating func array(depth: Int) -> String {
        if chance(5) { return pick(["[,]", "[", "[1 2]", "[1,,2]", "[]]", "[ ]"]) }
        let items = (0..<below(4)).map { _ in value(depth: depth) }
        var text = "[" + arraySpace()
        for (i, item) in items.enumerated() {
            text += item + arraySpace()
            if i < items.count - 1 { text += chance(96) ? "," + arraySpace() : " " }
        }
        if !items.isEmpty && chance(30) { text += "," + arraySpace() }
        return text + "]"
    }

    /// One character inserted, removed or replaced somewhere.
    private mutating func mutate(_ text: String) -> String {
        var scalars = Array(text.unicodeScalars)
        let at = below(scalars.count + 1)
        let extra = Array(pick(["\"", "'", "\\", " ", "#", ",", "]", "=", "_", "0", "x", "\r", "\n", "\t", "\u{0}", "é", "e", "+"])
            .unicodeScalars)[0]
        switch below(3) {
        case 0: scalars.insert(extra, at: at)
        case 1 where at < scalars.count: scalars.remove(at: at)
        default: if at < scalars.count { scalars[at] = extra } else { scalars.append(extra) }
        }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: scalars)
        return String(out)
    }
}
