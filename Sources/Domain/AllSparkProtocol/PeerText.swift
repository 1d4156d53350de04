/// Text a peer controls (a server's messages, command names, `message`
/// fields, close reasons, file names), made safe to put in a log line.
///
/// Control characters (`\n`, `\r`, ESC …), line and paragraph separators
/// and format characters (bidi overrides such as U+202E, zero-width
/// characters) are written as escapes, so a peer can neither start a
/// forged log line nor reorder what a terminal shows; a backslash is
/// doubled so an escape the peer wrote itself cannot pass for one of ours.
/// The result is bounded: at most `limit` characters of the text, then
/// how many more there were.
public func loggable(_ text: some StringProtocol, limit: Int = 200) -> String {
    var out = ""
    var kept = 0
    var total = 0
    for scalar in text.unicodeScalars {
        total += 1
        guard kept < limit else { continue }
        kept += 1
        switch scalar {
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case "\\": out += "\\\\"
        default:
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
                out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default:
                out.unicodeScalars.append(scalar)
            }
        }
    }
    if total > kept { out += "…(\(total - kept) more)" }
    return out
}
