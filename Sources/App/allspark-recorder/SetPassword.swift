import ArgumentParser
import Console
import Foundation
import RecorderCore

struct SetPassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-password",
        abstract: "Set the web console's password (user admin), or with --stream the RTSP stream's (user viewer), read from standard input.",
        discussion: """
            Stores a salted PBKDF2 hash in the storage folder of --config (never the \
            password):
              echo 'a long passphrase' | allspark-recorder set-password \\
                --config /etc/allspark-recorder/recorder.toml

            Without it the service makes a password at its first start and logs it \
            once. Sessions already logged in stay until they expire or the service \
            restarts.

            --stream sets the RTSP stream's own password instead (user viewer, for \
            the NVR's camera URL; stream.rtsp_listen): it opens only the anonymised \
            stream, never the console.
            """)

    @Option(help: "The config file (its recording.storage_dir keeps the password hash).")
    var config: String

    @Flag(help: "Set the RTSP stream's password (user viewer) instead of the console's.")
    var stream = false

    @OptionGroup var common: CommonOptions

    func run() throws {
        common.bootstrapLogging()
        let configuration: RecorderConfig
        do { configuration = try ConfigLoader.load(file: config, overrides: common.overrides) } catch { fail("\(error)") }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            fail("no password on standard input (e.g. echo 'a long passphrase' | allspark-recorder set-password --config \(config))")
        }
        let directory = configuration.recording.storageDirectory
        let store = stream ? ConsolePassword.stream(storageDirectory: directory) : ConsolePassword(storageDirectory: directory)
        do { try store.set(line) } catch { fail("\(error)") }
        let user = stream ? ConsolePassword.streamUser : ConsolePassword.user
        FileHandle.standardError.write(Data("The \(store.purpose) password for \(user) is set (\(store.path)).\n".utf8))
    }
}
