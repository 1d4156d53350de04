import Foundation
import Logging
import Storage

/// The name the recorder gives the server (`clientInfo`), which files its
/// uploads under it: unique and stable, as the iOS app makes it. A name set
/// in the config (`device.name`) is used as given. The default, the host
/// name, gets a `-NNN` suffix when it has no run of three digits (many boxes
/// share a host name such as "raspberrypi"); the three digits are drawn
/// once and kept in the storage folder (`device-name.json`), so the name
/// survives restarts and upgrades.
public enum DeviceName {
    struct Kept: Codable, Equatable {
        var suffix: String
    }

    public static let fileName = StorageLayout.deviceNameFileName

    /// True when `name` holds three digits in a row (it is told apart already).
    public static func hasRunOfThreeDigits(_ name: String) -> Bool {
        var run = 0
        for character in name.unicodeScalars {
            run = ("0"..."9").contains(character) ? run + 1 : 0
            if run == 3 { return true }
        }
        return false
    }

    /// The name for `device`: as configured, or the host name with its kept suffix (drawn
    /// and kept now if there is none yet). If the suffix cannot be kept, it is used for this
    /// run and the failure logged: the name may change at the next start.
    public static func resolve(_ device: RecorderConfig.Device, storageDirectory: String, logger: Logger,
                               draw: () -> Int = { Int.random(in: 100...999) }) -> String {
        guard device.nameIsHostName, !hasRunOfThreeDigits(device.name) else { return device.name }
        let file = KeptFile<Kept>(storageDirectory: storageDirectory, name: fileName)
        if let kept = file.load(), isSuffix(kept.suffix) { return "\(device.name)-\(kept.suffix)" }
        let suffix = String(format: "%03d", draw() % 1000)
        do {
            try file.save(Kept(suffix: suffix))
            logger.notice("device name: the host name \"\(device.name)\" has no three digits in a row; it is \"\(device.name)-\(suffix)\" from now on (the suffix is kept in \(file.url.path); set device.name to choose a name)")
        } catch {
            logger.warning("device name: cannot keep the suffix in \(file.url.path) (\(error)); \"\(device.name)-\(suffix)\" is used for now and may change at the next start")
        }
        return "\(device.name)-\(suffix)"
    }

    private static func isSuffix(_ text: String) -> Bool {
        text.count == 3 && text.unicodeScalars.allSatisfy { ("0"..."9").contains($0) }
    }
}
