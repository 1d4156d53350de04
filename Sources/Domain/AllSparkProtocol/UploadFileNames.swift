/// How the time in an uploaded file's name is written (`server.file_names`).
///
/// Servers take the number after the last `_` of a filename as its time.
/// Since 0.5 they read it as milliseconds when it is larger than
/// 9,999,999,999 (the recorder's and the iOS app's `chunk_<epoch ms>`);
/// servers before 0.5 read it as seconds, fail on a millisecond name and drop
/// the connection at every upload. For them, `.seconds` sends the same
/// files under `<name>_<epoch s>`: only the name in the upload metadata
/// changes, never a file on disk. (Two files of one kind starting within
/// the same second would share a name; chunks last a second or more.)
public enum UploadFileNames: String, CaseIterable, Sendable {
    case milliseconds = "ms"
    case seconds

    /// Largest number a server reads as seconds.
    static let largestSeconds: Int64 = 9_999_999_999

    /// The name `file` (a plain name, e.g. `chunk_1700000000123.mp4`) is uploaded as.
    public func wireName(_ file: String) -> String {
        guard self == .seconds, let underscore = file.lastIndex(of: "_") else { return file }
        let tail = file[file.index(after: underscore)...]
        let digits = tail.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let number = Int64(digits), number > Self.largestSeconds else { return file }
        return file[...underscore] + String(number / 1000) + tail.dropFirst(digits.count)
    }
}
