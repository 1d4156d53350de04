import CProcessArguments

/// The process's arguments as the kernel passed them, whatever changed the
/// environment before `main` (see CProcessArguments). Use these, not
/// `CommandLine.arguments`, in the executable.
public enum ProcessArguments {
    /// argv[0] first; nil when they could not be captured (not glibc).
    public static let all: [String]? = {
        let count = Int(process_arguments_count())
        guard count > 0 else { return nil }
        return (0..<count).map { process_argument(Int32($0)).map { String(cString: $0) } ?? "" }
    }()

    /// The arguments after the program's name (CommandLine's where none were captured).
    public static var afterProgramName: [String] { Array((all ?? CommandLine.arguments).dropFirst()) }

    /// The program as started (argv[0]).
    public static var programName: String { (all ?? CommandLine.arguments).first ?? "allspark-recorder" }
}
