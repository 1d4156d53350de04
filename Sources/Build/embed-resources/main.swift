import Foundation

// embed-resources OUTPUT.swift FILE…: writes a Swift file holding each FILE's
// text, so the console's page and API document live in files of their own
// (edited as HTML and JSON) yet are served from the binary, which needs no
// resource bundle beside it (a release build, the Debian package's static binary).
let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first, arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: embed-resources OUTPUT.swift FILE…\n".utf8))
    exit(2)
}
var swift = "// Generated at build time by the EmbedResources plugin (Plugins/EmbedResources) from the target's Resources folder.\n"
swift += "enum EmbeddedResources {\n    /// Each file's text by its name.\n    static let text: [String: String] = [\n"
for path in arguments.dropFirst().sorted() {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
        FileHandle.standardError.write(Data("embed-resources: cannot read \(path) as UTF-8\n".utf8))
        exit(1)
    }
    // A raw string whose delimiter appears nowhere in the text: as many `#` as needed.
    var hashes = "#"
    while text.contains("\"\"\"" + hashes) || text.contains("\\" + hashes) { hashes += "#" }
    let name = (path as NSString).lastPathComponent
    // The closing delimiter at column 0 strips no indentation; the line break before it is not part of the text.
    swift += "        \"\(name)\": \(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes),\n"
}
swift += "    ]\n}\n"
do {
    // Rewritten only when it changed, so an unchanged file does not recompile the target.
    if (try? String(contentsOfFile: output, encoding: .utf8)) != swift {
        try swift.write(toFile: output, atomically: true, encoding: .utf8)
    }
} catch {
    FileHandle.standardError.write(Data("embed-resources: cannot write \(output): \(error)\n".utf8))
    exit(1)
}
