import ServerLink
