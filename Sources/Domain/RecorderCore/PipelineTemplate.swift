import Foundation

/// A pipeline description file in gst-launch syntax, with `#` comments and
/// `${name}` variables, turned into one launch string while remembering
/// which line each piece came from, so that errors found later by
/// GStreamer can still point at a line of the user's file.
public struct PipelineTemplate: Sendable {
    /// Names of the elements the service plugs into.
    public enum Contract {
        public static let captureSink = "blur_in"
        public static let processedSource = "blur_out"
        public static let chunkSink = "chunks"
        /// Optional: `appsink name=audio_in` takes raw audio for the chunks' audio companions.
        public static let audioSink = "audio_in"
    }

    public struct Line: Sendable, Equatable {
        public var number: Int
        /// The line after comment removal and substitution.
        public var text: String
    }

    public let file: String
    public let lines: [Line]
    /// Values of variables that hold credentials (a name containing "password" or "secret"):
    /// what `redacted` hides before anything is printed or logged.
    public let secrets: [String]

    /// The launch description GStreamer parses.
    public var description: String {
        lines.map(\.text).filter { !$0.isEmpty }.joined(separator: " ")
    }

    /// `text` (the description, a GStreamer message) with every credential replaced by `********`.
    public func redacted(_ text: String) -> String {
        secrets.reduce(text) { $0.replacingOccurrences(of: $1, with: "********") }
    }

    /// Whether a variable's value is a credential, never to be shown.
    public static func isSecret(_ name: String) -> Bool {
        let lower = name.lowercased()
        return lower.contains("password") || lower.contains("secret")
    }

    public init(file: String, variables: [String: String]) throws {
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw PipelineError(file: file, line: nil, reason: "cannot read the pipeline file (\(error.localizedDescription))")
        }
        try self.init(text: text, file: file, variables: variables)
    }

    public init(text: String, file: String, variables: [String: String]) throws {
        self.file = file
        secrets = variables.filter { Self.isSecret($0.key) && !$0.value.isEmpty }.map(\.value).sorted { $0.count > $1.count }
        var lines: [Line] = []
        var number = 0
        // Every variable the file lacks, named at once: one run of check-pipeline lists all that
        // a new camera's config must set, not one per run.
        var missing: [(name: String, line: Int)] = []
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let stripped = try Self.stripComment(String(raw), file: file, line: number)
            let substituted = try Self.substitute(stripped, variables: variables, file: file, line: number) { name in
                if !missing.contains(where: { $0.name == name }) { missing.append((name, number)) }
            }
            lines.append(Line(number: number, text: substituted.trimmingCharacters(in: .whitespaces)))
        }
        if let first = missing.first {
            let known = variables.keys.sorted()
            let defined = known.isEmpty ? "" : " (defined: \(known.joined(separator: ", ")))"
            if missing.count == 1 {
                throw PipelineError(file: file, line: first.line, reason: "unknown variable ${\(first.name)}; set it under [pipeline.vars] in the config or with --set pipeline.vars.\(first.name)=VALUE" + defined)
            }
            let names = missing.map { "${\($0.name)} (line \($0.line))" }.joined(separator: ", ")
            throw PipelineError(file: file, line: first.line, reason: "\(missing.count) unknown variables: \(names); set them under [pipeline.vars] in the config or with --set pipeline.vars.NAME=VALUE" + defined)
        }
        self.lines = lines
        try checkLinks()
        if description.isEmpty {
            throw PipelineError(file: file, line: nil, reason: "the file holds no pipeline (only comments or blank lines)")
        }
    }

    /// Removes a `#` comment unless the `#` is inside quotes; refuses unbalanced quotes.
    static func stripComment(_ line: String, file: String, line number: Int) throws -> String {
        var out = ""
        var quote: Character?
        for c in line {
            if let q = quote {
                if c == q { quote = nil }
            } else if c == "\"" || c == "'" {
                quote = c
            } else if c == "#" {
                break
            }
            out.append(c)
        }
        if let q = quote {
            throw PipelineError(file: file, line: number, reason: "unterminated quote (\(q)): close it on the same line")
        }
        return out
    }

    /// Replaces `${name}` with its value; `$$` is a literal `$`.
    /// A variable with no value goes to `missing` and is replaced by nothing.
    static func substitute(_ line: String, variables: [String: String], file: String, line number: Int,
                           missing: (String) -> Void) throws -> String {
        var out = ""
        var rest = Substring(line)
        while let dollar = rest.firstIndex(of: "$") {
            out += rest[..<dollar]
            let after = rest[rest.index(after: dollar)...]
            if after.hasPrefix("$") {
                out += "$"
                rest = after.dropFirst()
            } else if after.hasPrefix("{") {
                guard let close = after.firstIndex(of: "}") else {
                    throw PipelineError(file: file, line: number, reason: "'${' without a closing '}'")
                }
                let name = String(after[after.index(after: after.startIndex)..<close])
                if let value = variables[name] { out += value } else { missing(name) }
                rest = after[after.index(after: close)...]
            } else {
                out += "$"
                rest = after
            }
        }
        out += rest
        return out
    }

    /// Catches the link mistakes gst_parse reports only as "syntax error".
    func checkLinks() throws {
        let content = lines.filter { !$0.text.isEmpty }
        guard let first = content.first, let last = content.last else { return }
        if first.text.hasPrefix("!") {
            throw PipelineError(file: file, line: first.number, reason: "the pipeline starts with '!': a link needs an element before it")
        }
        if last.text.hasSuffix("!") {
            throw PipelineError(file: file, line: last.number, reason: "the pipeline ends with '!': a link needs an element after it")
        }
        var previousEndedWithLink: Line?
        for line in content {
            let squeezed = line.text.replacingOccurrences(of: " ", with: "")
            if squeezed.contains("!!") {
                throw PipelineError(file: file, line: line.number, reason: "two '!' in a row: an element is missing between them")
            }
            if let previous = previousEndedWithLink, line.text.hasPrefix("!") {
                throw PipelineError(file: file, line: line.number, reason: "'!' here follows the '!' that ends line \(previous.number): an element is missing between them")
            }
            previousEndedWithLink = line.text.hasSuffix("!") ? line : nil
        }
    }

    /// The first line on which `token` appears as a whole word (element, property or name).
    public func line(mentioning token: String) -> Int? {
        guard !token.isEmpty else { return nil }
        for line in lines {
            var searchRange = line.text.startIndex..<line.text.endIndex
            while let found = line.text.range(of: token, range: searchRange) {
                let before = found.lowerBound == line.text.startIndex ? nil : line.text[line.text.index(before: found.lowerBound)]
                let after = found.upperBound == line.text.endIndex ? nil : line.text[found.upperBound]
                let isWordChar = { (c: Character?) in c.map { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" } ?? false }
                if !isWordChar(before) && !isWordChar(after) { return line.number }
                searchRange = found.upperBound..<line.text.endIndex
            }
        }
        return nil
    }
}

/// A pipeline description that cannot be used, with the file and line.
public struct PipelineError: Error, CustomStringConvertible, Equatable {
    public var file: String
    public var line: Int?
    public var reason: String
    public init(file: String, line: Int?, reason: String) {
        self.file = file
        self.line = line
        self.reason = reason
    }
    public var description: String {
        line.map { "\(file):\($0): \(reason)" } ?? "\(file): \(reason)"
    }
}
