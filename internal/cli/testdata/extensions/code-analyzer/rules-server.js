console.log("rules")
